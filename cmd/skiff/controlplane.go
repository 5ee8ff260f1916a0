package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/controlplane"
)

// controlPlaneOptions are the flags of `skiff agent --control-plane`
// (issue 17): the agent runs skiff's API server shim as a supervised child
// and joins it as its own Node.
type controlPlaneOptions struct {
	enabled     bool
	binary      string
	bindAddress string
	port        int
	etcdServers []string
}

func addControlPlaneFlags(f *pflag.FlagSet, o *controlPlaneOptions) {
	f.BoolVar(&o.enabled, "control-plane", false, "run skiff's Kubernetes API server (skiff-apiserver) for this node under <root-dir>/apiserver, write <root-dir>/admin.kubeconfig for kubectl, and join it as this node (instead of --kubeconfig)")
	f.StringVar(&o.binary, "control-plane-binary", "skiff-apiserver", "the skiff-apiserver executable (a name: beside this executable, else on PATH)")
	f.StringVar(&o.bindAddress, "control-plane-bind-address", "127.0.0.1", "address the control plane's API listens on")
	f.IntVar(&o.port, "control-plane-port", 6443, "HTTPS port of the control plane's API")
	f.StringSliceVar(&o.etcdServers, "control-plane-etcd-servers", nil, "external etcd client URLs for the control plane instead of its embedded etcd")
}

// validate checks the flags against the API source's: the control plane
// is the API server the node joins, so --kubeconfig must not name another.
func (o *controlPlaneOptions) validate(api *apiOptions) error {
	if !o.enabled {
		return nil
	}
	switch {
	case api.kubeconfig != "":
		return errors.New("--control-plane joins the node to its own API server: drop --kubeconfig")
	case api.bootstrap != "" || api.rotateCerts:
		return errors.New("--control-plane issues the node's certificate itself: drop --bootstrap-kubeconfig and --rotate-certificates")
	case o.port < 1 || o.port > 65535:
		return errors.New("--control-plane-port: want 1-65535")
	}
	return nil
}

// dataDir is the shim's --data-dir, <root-dir>/apiserver.
func (o *controlPlaneOptions) dataDir(rootDir string) string {
	return filepath.Join(rootDir, "apiserver")
}

// start runs the shim (when enabled) and points the API source at it:
// api.kubeconfig becomes the node kubeconfig the shim issued, whose CA
// (the shim's) the kubelet API (k) then trusts for client certificates,
// the shim's kubelet client certificate among them; the shim reaches this
// node's kubelet API where k listens. It returns the shim's stop, to be
// deferred (nil func when disabled).
func (o *controlPlaneOptions) start(ctx context.Context, rootDir, node string, api *apiOptions, k *kubeletAPIOptions, log *slog.Logger) (func(), error) {
	if !o.enabled {
		return func() {}, nil
	}
	bin, err := controlplane.FindBinary(o.binary)
	if err != nil {
		return nil, err
	}
	s, err := controlplane.Start(ctx, controlplane.Config{
		Binary: bin, DataDir: o.dataDir(rootDir), NodeName: node,
		BindAddress: o.bindAddress, Port: o.port, EtcdServers: o.etcdServers,
		AdminKubeconfig: filepath.Join(rootDir, "admin.kubeconfig"), Logger: log,
		NodeKubeletHost: k.apiServerHost(),
	})
	if err != nil {
		return nil, err
	}
	api.kubeconfig = s.NodeKubeconfig()
	return func() {
		// A fresh context: the agent's has ended by now.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			log.Warn("stopping skiff-apiserver", "err", err)
		}
	}, nil
}
