// Command kube-controlplane is the upstream Kubernetes control plane for
// skiff's tests (issue 16), built from the published k8s.io/kubernetes module
// (make controlplane). It is one multi-call binary, hyperkube style, so the
// large shared dependency graph is linked once:
//
//	kube-controlplane kube-apiserver ARGS...
//	kube-controlplane kube-controller-manager ARGS...
//	kube-controlplane kube-scheduler ARGS...
//	kube-controlplane kubectl ARGS...
//
// The command may also be named by the binary's own name (a symlink called
// kube-apiserver, ...). It is a separate Go module so that skiff's own module
// never depends on k8s.io/kubernetes; go.mod pins the version and replaces
// every staging module (k8s.io/api, k8s.io/client-go, ...) by its published
// release, as k8s.io/kubernetes' own replace directives only work inside its
// repository.
//
// Each command's body is cmd/<command>/*.go of that version, blank imports
// included (log format and metrics registration).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zone support (kube-apiserver, kube-controller-manager)

	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics registration
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
)

// commands maps a command name to its upstream main body; each returns the
// process exit code.
var commands = map[string]func() int{
	"kube-apiserver":          apiserverMain,
	"kube-controller-manager": controllerManagerMain,
	"kube-scheduler":          schedulerMain,
	"kubectl":                 kubectlMain,
}

func main() {
	name := filepath.Base(os.Args[0])
	run, ok := commands[name]
	if !ok && len(os.Args) > 1 {
		name = os.Args[1]
		run, ok = commands[name]
		// The upstream mains read os.Args (cobra, kubectl's verbosity and
		// plugin handling): make it what a standalone binary would see.
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	if !ok {
		usage()
		os.Exit(2)
	}
	os.Exit(run())
}

func usage() {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: %s COMMAND [ARGS...]\ncommands: %s\n",
		filepath.Base(os.Args[0]), strings.Join(names, ", "))
}
