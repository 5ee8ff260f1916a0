// Command kubelet is the upstream kubelet, built from the published
// k8s.io/kubernetes module for skiff's benchmarks (make bench-kubelet). It is
// a separate Go module so that skiff's own module never depends on
// k8s.io/kubernetes; go.mod pins the version and replaces every staging
// module (k8s.io/api, k8s.io/client-go, ...) by its published release, as
// k8s.io/kubernetes' own replace directives only work inside its repository.
//
// The body is cmd/kubelet/kubelet.go of that version.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metric registration
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	command := app.NewKubeletCommand(context.Background())
	os.Exit(cli.Run(command))
}
