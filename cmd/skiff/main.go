// Command skiff is a kubelet-like node agent: `skiff agent` runs pods from a
// static-pod directory on containerd through CRI; the other subcommands talk
// to a running agent through its local API.
//
// skiff is a multi-call binary: invoked as "pause" (argv[0]) it is the pod
// sandbox's pause process, so skiff can build its own pause image on
// machines without a registry.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skiffnode/skiff/internal/pause"
)

func main() {
	if filepath.Base(os.Args[0]) == "pause" {
		os.Exit(pause.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		var exit *exitCodeError
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		fmt.Fprintln(os.Stderr, "skiff:", err)
		os.Exit(1)
	}
}

// defaultRootDir is the agent's state directory, like /var/lib/kubelet.
const defaultRootDir = "/var/lib/skiff"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "skiff",
		Short:         "skiff runs Kubernetes pods on a node, like the kubelet",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newAgentCmd(), newPodsCmd(), newLogsCmd(), newImagesCmd(),
		newExecCmd(), newDescribeCmd(), newEventsCmd(), newTopCmd(),
		newAttachCmd(), newPortForwardCmd())
	return root
}
