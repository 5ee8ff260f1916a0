package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/apisource"
	"github.com/skiffnode/skiff/internal/cliview"
	"github.com/skiffnode/skiff/server"
)

// clientOptions locate a running agent.
type clientOptions struct {
	rootDir string
	server  string
}

func (c *clientOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.rootDir, "root-dir", defaultRootDir, "the agent's --root-dir (its API socket is <root-dir>/skiff.sock)")
	cmd.Flags().StringVar(&c.server, "server", "", "agent API address: a unix socket path or http://host:port (overrides --root-dir)")
}

func (c *clientOptions) client() (*server.Client, error) {
	addr := c.server
	if addr == "" {
		addr = filepath.Join(c.rootDir, "skiff.sock")
	}
	return server.NewClient(addr)
}

func newPodsCmd() *cobra.Command {
	var co clientOptions
	var output string
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "List the agent's pods (like kubectl get pods)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := co.client()
			if err != nil {
				return err
			}
			list, err := cl.Pods(cmd.Context())
			if err != nil {
				return err
			}
			switch output {
			case "", "wide":
				if len(list.Items) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
					return nil
				}
				if err := cliview.PrintPods(cmd.OutOrStdout(), list.Items, output == "wide", time.Now()); err != nil {
					return err
				}
				if n := offlinePods(list.Items); n != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "Running from the offline copy (the API server did not answer at start): %s\n", n)
				}
				return nil
			case "json", "yaml":
				return cliview.PrintObject(cmd.OutOrStdout(), list, output)
			default:
				return fmt.Errorf("--output %q: must be one of wide, json, yaml", output)
			}
		},
	}
	co.addFlags(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, json or yaml")
	return cmd
}

// offlinePods names the pods that run from the offline copy
// (--offline-pods), "namespace/name, ..."; "" if none.
func offlinePods(pods []v1.Pod) string {
	var names []string
	for _, p := range pods {
		if _, ok := p.Annotations[apisource.OfflineCopyAnnotation]; ok {
			names = append(names, p.Namespace+"/"+p.Name)
		}
	}
	return strings.Join(names, ", ")
}

func newLogsCmd() *cobra.Command {
	var co clientOptions
	var opts server.LogOptions
	var container, namespace string
	cmd := &cobra.Command{
		Use:   "logs POD",
		Short: "Print a container's logs (like kubectl logs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := co.client()
			if err != nil {
				return err
			}
			if container == "" {
				if container, err = onlyContainer(cmd, cl, namespace, args[0]); err != nil {
					return err
				}
			}
			return cl.Logs(cmd.Context(), namespace, args[0], container, opts, cmd.OutOrStdout())
		},
	}
	co.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&container, "container", "c", "", "container name (default: the pod's only app container)")
	f.StringVarP(&namespace, "namespace", "n", "default", "pod namespace")
	f.BoolVarP(&opts.Follow, "follow", "f", false, "stream new output")
	f.BoolVarP(&opts.Previous, "previous", "p", false, "print the previous run's logs")
	f.IntVar(&opts.TailLines, "tail", -1, "lines from the end to print (-1: all)")
	f.BoolVar(&opts.Timestamps, "timestamps", false, "prefix each line with its timestamp")
	return cmd
}

// onlyContainer picks the pod's single app container, as kubectl does.
func onlyContainer(cmd *cobra.Command, cl *server.Client, ns, name string) (string, error) {
	list, err := cl.Pods(cmd.Context())
	if err != nil {
		return "", err
	}
	for _, p := range list.Items {
		if p.Namespace != ns || p.Name != name {
			continue
		}
		if len(p.Spec.Containers) == 1 {
			return p.Spec.Containers[0].Name, nil
		}
		return "", fmt.Errorf("pod %s has several containers, choose one with -c: %s", name, containerNames(p))
	}
	return "", fmt.Errorf("pod %s/%s not found", ns, name)
}

func containerNames(p v1.Pod) string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return strings.Join(names, " ")
}
