package main

import (
	"fmt"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
)

// attachOptions are the flags of `skiff attach`.
type attachOptions struct {
	co                   clientOptions
	namespace, container string
	stdin, tty           bool
}

func newAttachCmd() *cobra.Command {
	var o attachOptions
	cmd := &cobra.Command{
		Use:   "attach POD [-c CONTAINER] [-i] [-t]",
		Short: "Attach to the main process of a running container (like kubectl attach)",
		Long: `Attach to the main process of a running container: its output is copied
here and, with -i, stdin goes to it. The terminal follows the container
(its spec's tty): -t only takes effect for a container that has one, and
then the local terminal is put in raw mode. Without -c the pod's first app
container is used (or the one named by the kubectl.kubernetes.io/default-container
annotation). The session goes through the agent's /attach endpoint to the
runtime's streaming server.`,
		Example: `  skiff attach web-node1
  skiff attach shell-node1 -c sh -it`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.co.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "pod namespace")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first app container)")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&o.tty, "tty", "t", false, "stdin is a terminal (the container must have one)")
	return cmd
}

// run attaches as kubectl attach does: a container started with a tty is
// always attached with one (else the runtime refuses the session); -t for
// a container without one is dropped with kubectl's warning.
func (o *attachOptions) run(cmd *cobra.Command, podName string) error {
	pod, name, err := runningContainer(cmd, &o.co, o.namespace, podName, o.container)
	if err != nil {
		return err
	}
	spec := containerByName(pod, name)
	if o.tty && !spec.TTY {
		fmt.Fprintf(cmd.ErrOrStderr(), "error: Unable to use a TTY - container %s did not allocate one\n", name)
	}
	_, isTerm := terminalFd(cmd.InOrStdin())
	raw := spec.TTY && o.tty && o.stdin && isTerm
	if raw {
		fmt.Fprintln(cmd.ErrOrStderr(), "If you don't see a command prompt, try pressing enter.")
	}
	return runStream(cmd, streamRequest{
		addr: o.co.address(), path: streamPath("attach", o.namespace, pod.Name, name),
		stdin: o.stdin, tty: spec.TTY, raw: raw,
	})
}

// containerByName returns the pod's app or init container name (the zero
// container with that name if it has none: pickContainer checked).
func containerByName(pod *v1.Pod, name string) v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return c
			}
		}
	}
	return v1.Container{Name: name}
}
