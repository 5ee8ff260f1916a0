package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/cliview"
	"github.com/skiffnode/skiff/server"
)

func newDescribeCmd() *cobra.Command {
	var co clientOptions
	var namespace string
	cmd := &cobra.Command{
		Use:   "describe pod [NAME_PREFIX]",
		Short: "Show details of pods and their events (like kubectl describe pod)",
		Long: `Show details of a pod, its containers and its recent events.
As with kubectl, NAME_PREFIX selects the pod with exactly that name or, when
there is none, every pod whose name starts with it; without it every pod of
the namespace is described. "pod/NAME" is accepted too.`,
		Example: `  skiff describe pod web-node1
  skiff describe pods web
  skiff describe pod/web-node1 -n kube-system`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix, err := describeTarget(args)
			if err != nil {
				return err
			}
			cl, err := co.client()
			if err != nil {
				return err
			}
			pods, err := matchPods(cmd, cl, namespace, prefix)
			if err != nil {
				return err
			}
			return describePods(cmd, cl, pods)
		},
	}
	co.addFlags(cmd)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "pod namespace")
	return cmd
}

// describeTarget parses "pod NAME", "pods NAME", "pod/NAME" or "pod" into
// the name (prefix) to describe; "" means all pods.
func describeTarget(args []string) (string, error) {
	kind, name := args[0], ""
	if k, n, ok := strings.Cut(kind, "/"); ok {
		if len(args) > 1 {
			return "", fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'skiff describe pod/%s')", n)
		}
		kind, name = k, n
	} else if len(args) > 1 {
		name = args[1]
	}
	switch kind {
	case "pod", "pods", "po":
		return name, nil
	}
	return "", fmt.Errorf("the server doesn't have a resource type %q: skiff describes pods only", kind)
}

// matchPods returns the namespace's pods named name, or else those whose
// name starts with it (all of them for ""), as kubectl describe selects.
func matchPods(cmd *cobra.Command, cl *server.Client, namespace, name string) ([]v1.Pod, error) {
	list, err := cl.Pods(cmd.Context())
	if err != nil {
		return nil, err
	}
	var prefixed []v1.Pod
	for _, p := range list.Items {
		if p.Namespace != namespace {
			continue
		}
		if p.Name == name {
			return []v1.Pod{p}, nil
		}
		if strings.HasPrefix(p.Name, name) {
			prefixed = append(prefixed, p)
		}
	}
	if len(prefixed) > 0 {
		return prefixed, nil
	}
	if name == "" {
		return nil, fmt.Errorf("no pods found in namespace %q", namespace)
	}
	return nil, fmt.Errorf("pods %q not found in namespace %q", name, namespace)
}

// describePods describes each pod with its events, separated as kubectl
// separates them.
func describePods(cmd *cobra.Command, cl *server.Client, pods []v1.Pod) error {
	for i := range pods {
		p := &pods[i]
		evs, err := cl.Events(cmd.Context(), server.PodEventSelector(p.Namespace, p.Name, p.UID))
		var events []v1.Event
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: events of pod %s/%s: %v\n", p.Namespace, p.Name, err)
		} else {
			events = evs.Items
		}
		if i > 0 {
			fmt.Fprint(cmd.OutOrStdout(), "\n\n")
		}
		if err := cliview.DescribePod(cmd.OutOrStdout(), p, events, time.Now()); err != nil {
			return err
		}
	}
	return nil
}
