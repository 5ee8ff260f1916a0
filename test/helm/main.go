// Command helm is Helm's own CLI (helm.sh/helm/v4's cmd/helm), built from
// its Go module for the chart test against `skiff agent --control-plane`
// (issue 36), as test/controlplane builds kubectl. Never imported by
// skiff's module.
package main

import (
	"errors"
	"log/slog"
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins, as upstream

	helmcmd "helm.sh/helm/v4/pkg/cmd"
	"helm.sh/helm/v4/pkg/kube"
)

// main is upstream's cmd/helm/helm.go.
func main() {
	kube.ManagedFieldsManager = "helm"
	cmd, err := helmcmd.NewRootCmd(os.Stdout, os.Args[1:], helmcmd.SetupLogging)
	if err != nil {
		slog.Warn("command failed", slog.Any("error", err))
		os.Exit(1)
	}
	if err := cmd.Execute(); err != nil {
		if cerr, ok := errors.AsType[helmcmd.CommandError](err); ok {
			os.Exit(cerr.ExitCode)
		}
		os.Exit(1)
	}
}
