package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/server"
)

// defaultContainerAnnotation names the container kubectl picks when none is
// given (KEP-2227).
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// exitCodeError makes the process exit with code without printing
// anything: the command's own output already said what happened.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", e.code)
}

// execOptions are the flags of `skiff exec`.
type execOptions struct {
	co                   clientOptions
	namespace, container string
	timeout              time.Duration
	stdin, tty           bool
}

func newExecCmd() *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec POD [-c CONTAINER] [--timeout D] -- COMMAND [ARGS...]",
		Short: "Run a command in a running container (like kubectl exec)",
		Long: `Run a command in a running container of a pod and wait for it to exit.
Its stdout and stderr are passed through and skiff exits with its exit code
(without kubectl's "command terminated with exit code N" line).
Without -c the pod's first app container is used (or the one named by the
kubectl.kubernetes.io/default-container annotation). Without -i and -t the
command gets no stdin and its output is printed when it exits; with -i
stdin is passed on and output streams as it comes, and -it gives it a
terminal (the local one in raw mode), through the runtime's streaming
server. Over that stream the end of stdin is not passed on: a command
reading stdin to its end does not see it.`,
		Example: `  skiff exec web-node1 -- sh -c 'echo $HOSTNAME'
  skiff exec web-node1 -c sidecar --timeout 10s -- cat /etc/resolv.conf
  skiff exec -it web-node1 -- sh`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pod, command, err := execArgs(args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			if o.stdin || o.tty {
				if o.timeout != 0 {
					return errors.New("--timeout applies to commands without -i/-t only")
				}
				return o.runInteractive(cmd, pod, command)
			}
			return o.run(cmd, pod, command)
		},
	}
	o.co.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "pod namespace")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first app container)")
	f.DurationVar(&o.timeout, "timeout", 0, "stop waiting for the command after this long, rounded up to whole seconds (0: no limit)")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&o.tty, "tty", "t", false, "stdin is a terminal: give the command one (with -i)")
	return cmd
}

// execArgs splits the arguments into the pod name and the command, which
// must follow "--" as kubectl requires.
func execArgs(args []string, dash int) (string, []string, error) {
	if dash < 0 {
		if len(args) > 1 {
			return "", nil, fmt.Errorf("put the command after --: skiff exec %s -- %s", args[0], strings.Join(args[1:], " "))
		}
		return "", nil, errors.New("no command given: skiff exec POD -- COMMAND [ARGS...]")
	}
	if dash != 1 {
		return "", nil, errors.New("exactly one pod name must come before --: skiff exec POD -- COMMAND [ARGS...]")
	}
	if len(args) == 1 {
		return "", nil, errors.New("no command given after --")
	}
	pod := args[0]
	if kind, name, ok := strings.Cut(pod, "/"); ok {
		if kind != "pod" && kind != "pods" && kind != "po" {
			return "", nil, fmt.Errorf("%s: skiff exec works on pods only", pod)
		}
		pod = name
	}
	return pod, args[1:], nil
}

// run checks the target, runs the command and passes its output through.
func (o *execOptions) run(cmd *cobra.Command, podName string, command []string) error {
	cl, err := o.co.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	pod, err := getPod(ctx, cl, o.namespace, podName)
	if err != nil {
		return err
	}
	c, err := pickContainer(pod, o.container, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if err := checkRunning(pod, c); err != nil {
		return err
	}
	res, err := cl.Exec(ctx, o.namespace, pod.Name, c, command, o.timeout)
	if err != nil {
		var se *server.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return fmt.Errorf("container %q of pod %s/%s: %s", c, o.namespace, pod.Name, se.Message)
		}
		return fmt.Errorf("exec in container %q of pod %s/%s: %w", c, o.namespace, pod.Name, err)
	}
	if _, err := cmd.OutOrStdout().Write(res.Stdout); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	if _, err := cmd.ErrOrStderr().Write(res.Stderr); err != nil {
		return fmt.Errorf("write stderr: %w", err)
	}
	if res.ExitCode != 0 {
		return &exitCodeError{code: int(res.ExitCode)}
	}
	return nil
}

// getPod returns the pod namespace/name from the agent, or an error in
// kubectl's words when there is none.
func getPod(ctx context.Context, cl *server.Client, namespace, name string) (*v1.Pod, error) {
	list, err := cl.Pods(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if p := &list.Items[i]; p.Namespace == namespace && p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pods %q not found in namespace %q (list them with skiff pods)", name, namespace)
}

// pickContainer returns the container name to run in: the given one, which
// must exist, or kubectl's default (podcmd.FindOrDefaultContainerByName):
// the annotated default container, else the first app container, with a
// note on w when the pod has others.
func pickContainer(pod *v1.Pod, name string, w io.Writer) (string, error) {
	if name != "" {
		if !hasContainer(pod, name) {
			return "", fmt.Errorf("container %q not found in pod %s; its containers: %s", name, pod.Name, allContainerNames(pod))
		}
		return name, nil
	}
	if len(pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("pod %s/%s has no containers", pod.Namespace, pod.Name)
	}
	if def := pod.Annotations[defaultContainerAnnotation]; def != "" && hasContainer(pod, def) {
		return def, nil
	}
	first := pod.Spec.Containers[0].Name
	if len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 {
		fmt.Fprintf(w, "Defaulted container %q out of: %s\n", first, allContainerNames(pod))
	}
	return first, nil
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// allContainerNames lists the pod's containers as kubectl does:
// "app, sidecar, init (init)".
func allContainerNames(pod *v1.Pod) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	return strings.Join(names, ", ")
}

// checkRunning fails unless the pod's status shows container running.
func checkRunning(pod *v1.Pod, container string) error {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return fmt.Errorf("cannot exec into a container in a completed pod; current phase is %s", pod.Status.Phase)
	}
	statuses := append(append([]v1.ContainerStatus(nil), pod.Status.ContainerStatuses...), pod.Status.InitContainerStatuses...)
	for _, cs := range statuses {
		if cs.Name != container {
			continue
		}
		if cs.State.Running != nil {
			return nil
		}
		return fmt.Errorf("container %q of pod %s/%s is not running: %s", container, pod.Namespace, pod.Name, stateWords(cs.State))
	}
	return fmt.Errorf("container %q of pod %s/%s is not running: it has not been created yet", container, pod.Namespace, pod.Name)
}

// stateWords describes a container state that is not running.
func stateWords(s v1.ContainerState) string {
	switch {
	case s.Waiting != nil && s.Waiting.Reason != "":
		return "waiting (" + s.Waiting.Reason + ")"
	case s.Terminated != nil && s.Terminated.Reason != "":
		return fmt.Sprintf("terminated (%s, exit code %d)", s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated (exit code %d)", s.Terminated.ExitCode)
	}
	return "waiting"
}
