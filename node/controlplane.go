package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
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
	// ClusterDNS has the control plane serve the cluster DNS at the node's
	// first --cluster-dns address (default controlplane.DefaultClusterDNS).
	// It needs ServiceProxy: the address is a Service's cluster IP.
	ClusterDNS bool
}

// servesDNS reports whether the control plane serves the cluster DNS: asked
// for, and reachable (its address is a cluster IP, which only the service
// proxy carries).
func (o *ControlPlaneConfig) servesDNS() bool {
	return o.Enabled && o.ClusterDNS && o.ServiceProxy
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

// defaultClusterDNS completes and checks --cluster-dns (dns) when the
// control plane serves the cluster DNS (servesDNS: without the service
// proxy it does not, and pods get --cluster-dns as given): none given is its default address;
// the first one given must be an IPv4 address of its Service range, being
// the kube-dns Service's cluster IP; the zone is domain.
func (o *ControlPlaneConfig) defaultClusterDNS(dns *[]string, domain string) error {
	if !o.servesDNS() {
		return nil
	}
	if domain == "" {
		return errors.New("--cluster-domain: the control plane's cluster DNS needs a domain (or --control-plane-cluster-dns=false)")
	}
	if len(*dns) == 0 {
		*dns = []string{controlplane.DefaultClusterDNS}
		return nil
	}
	ip, err := netip.ParseAddr((*dns)[0])
	if err != nil || !ip.Is4() || !netip.MustParsePrefix(controlplane.ServiceCIDR).Contains(ip) {
		return fmt.Errorf("--cluster-dns %s: the control plane serves the cluster DNS at the first address, which must be an IPv4 address in its Service range %s (or --control-plane-cluster-dns=false, for a DNS of your own)",
			(*dns)[0], controlplane.ServiceCIDR)
	}
	return nil
}

// clusterDNS is what the control plane's Config says of the cluster DNS:
// the first of dns, answering podCIDR; none unless it serves it.
func (o *ControlPlaneConfig) clusterDNS(dns []string, podCIDR string) (address string, clients []string) {
	if !o.servesDNS() || len(dns) == 0 {
		return "", nil
	}
	return dns[0], []string{podCIDR}
}

// nonEmpty is s alone, or none when s is "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// dataDir is the shim's --data-dir, <root-dir>/apiserver.
func (o *ControlPlaneConfig) dataDir(rootDir string) string {
	return filepath.Join(rootDir, "apiserver")
}

// localPathDir is the shim's --local-path-dir, <root-dir>/storage: the
// directories of the PersistentVolumes it provisions.
func (o *ControlPlaneConfig) localPathDir(rootDir string) string {
	return filepath.Join(rootDir, "storage")
}

// start runs the shim (when enabled) and points the API source at it:
// api.kubeconfig becomes the node kubeconfig the shim issued, whose CA
// (the shim's) the kubelet API (k) then trusts for client certificates,
// the shim's kubelet client certificate among them; the shim reaches this
// node's kubelet API where k listens. It returns the shim's stop, to be
// deferred (nil func when disabled).
func (o *ControlPlaneConfig) start(ctx context.Context, c *Config, node string, log *slog.Logger) (func(), error) {
	if !o.Enabled {
		return func() {}, nil
	}
	rootDir, api, k := c.RootDir, &c.API, &c.KubeletAPI
	dns, clients := o.clusterDNS(c.ClusterDNS, c.PodCIDR)
	bin, err := controlplane.FindBinary(o.Binary)
	if err != nil {
		return nil, err
	}
	s, err := controlplane.Start(ctx, controlplane.Config{
		Binary: bin, DataDir: o.dataDir(rootDir), NodeName: node,
		BindAddress: o.BindAddress, Port: o.Port, EtcdServers: o.EtcdServers,
		AdminKubeconfig: filepath.Join(rootDir, "admin.kubeconfig"), Logger: log,
		NodeKubeletHost: k.apiServerHost(), ServiceProxy: o.ServiceProxy,
		ClusterDNS: dns, ClusterDomain: c.ClusterDomain, DNSClients: clients,
		APIClients: nonEmpty(c.PodCIDR), LocalPathDir: o.localPathDir(rootDir),
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
	stop, err := n.cfg.ControlPlane.start(ctx, &n.cfg, n.name, n.log)
	if err != nil {
		return err
	}
	n.onClose(stop)
	return nil
}
