package node

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/skiffnode/skiff/controlplane"
)

// controlPlaneOptions are the flags of `skiff agent --control-plane`
// (issue 17): the agent runs skiff's API server shim as a supervised child
// and joins it as its own Node.
type ControlPlaneConfig struct {
	Enabled     bool
	Binary      string
	BindAddress string
	Port        int
	EtcdServers []string
	// ServiceProxy runs the control plane's service proxy for this node
	// (skiff-apiserver --service-proxy).
	ServiceProxy bool
}

// validate checks the flags against the API source's: the control plane
// is the API server the node joins, so --kubeconfig must not name another.
func (o *ControlPlaneConfig) validate(api *APIConfig) error {
	if !o.Enabled {
		return nil
	}
	switch {
	case api.Kubeconfig != "":
		return errors.New("--control-plane joins the node to its own API server: drop --kubeconfig")
	case api.Bootstrap != "" || api.RotateCerts:
		return errors.New("--control-plane issues the node's certificate itself: drop --bootstrap-kubeconfig and --rotate-certificates")
	case o.Port < 1 || o.Port > 65535:
		return errors.New("--control-plane-port: want 1-65535")
	}
	return nil
}

// dataDir is the shim's --data-dir, <root-dir>/apiserver.
func (o *ControlPlaneConfig) dataDir(rootDir string) string {
	return filepath.Join(rootDir, "apiserver")
}

// start runs the shim (when enabled) and points the API source at it:
// api.kubeconfig becomes the node kubeconfig the shim issued, whose CA
// (the shim's) the kubelet API (k) then trusts for client certificates,
// the shim's kubelet client certificate among them; the shim reaches this
// node's kubelet API where k listens. It returns the shim's stop, to be
// deferred (nil func when disabled).
func (o *ControlPlaneConfig) start(ctx context.Context, rootDir, node string, api *APIConfig, k *KubeletAPIConfig, log *slog.Logger) (func(), error) {
	if !o.Enabled {
		return func() {}, nil
	}
	bin, err := controlplane.FindBinary(o.Binary)
	if err != nil {
		return nil, err
	}
	s, err := controlplane.Start(ctx, controlplane.Config{
		Binary: bin, DataDir: o.dataDir(rootDir), NodeName: node,
		BindAddress: o.BindAddress, Port: o.Port, EtcdServers: o.EtcdServers,
		AdminKubeconfig: filepath.Join(rootDir, "admin.kubeconfig"), Logger: log,
		NodeKubeletHost: k.apiServerHost(), ServiceProxy: o.ServiceProxy,
	})
	if err != nil {
		return nil, err
	}
	api.Kubeconfig = s.NodeKubeconfig()
	return func() {
		// A fresh context: the agent's has ended by now.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			log.Warn("stopping skiff-apiserver", "err", err)
		}
	}, nil
}

// startControlPlane is the control-plane phase: with --control-plane the
// shim runs, and the API source joins it.
func (n *Node) startControlPlane(ctx context.Context) error {
	stop, err := n.cfg.ControlPlane.start(ctx, n.cfg.RootDir, n.name, &n.cfg.API, &n.cfg.KubeletAPI, n.log)
	if err != nil {
		return err
	}
	n.onClose(stop)
	return nil
}
