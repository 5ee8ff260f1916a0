// Command skiff-apiserver is skiff's control-plane shim: a Kubernetes API
// server for one node, built on k8s.io/apiserver's generic server, storing
// in an embedded etcd (or an external one). It is a separate executable so
// that the agent neither links nor loads it (see shim/NOTES.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skiffnode/skiff/shim/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "skiff-apiserver:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	o := server.Options{}
	cmd := &cobra.Command{
		Use:           "skiff-apiserver",
		Short:         "Serve the Kubernetes API for one skiff node",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := server.New(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "skiff-apiserver: serving %s; admin kubeconfig %s\n", s.URL, s.Kubeconfig)
			if s.NodeKubeconfig != "" {
				fmt.Fprintf(os.Stderr, "skiff-apiserver: node %s kubeconfig %s\n", o.NodeName, s.NodeKubeconfig)
			}
			return s.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "/var/lib/skiff/apiserver", "state: embedded etcd in <data-dir>/etcd, certificates in <data-dir>/pki, admin.token and admin.kubeconfig")
	f.StringSliceVar(&o.EtcdServers, "etcd-servers", nil, "external etcd client URLs (comma-separated) instead of the embedded etcd")
	f.IntVar(&o.SecurePort, "secure-port", 6443, "HTTPS port of the API")
	f.StringVar(&o.BindAddress, "bind-address", "127.0.0.1", "address the API listens on")
	f.StringSliceVar(&o.ExtraSANs, "tls-san", nil, "extra host names or IPs in the serving certificate (generated at first start)")
	f.StringVar(&o.NodeName, "node-name", "", "node whose identity (system:node:<name>, group system:nodes) gets <data-dir>/node.kubeconfig, for the agent to join with; empty: none")
	return cmd
}
