package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

// kubectlMain is cmd/kubectl/kubectl.go's main; util.CheckErr exits on an
// error.
func kubectlMain() int {
	// As upstream: the verbosity is parsed by hand so that klog is set up
	// while the command is built (plugins, .kuberc).
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
	return 0
}
