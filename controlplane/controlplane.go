// Package controlplane runs skiff's control-plane shim, skiff-apiserver,
// as a supervised child of the agent (`skiff agent --control-plane`), the
// way runtime/containerd runs the managed containerd: one command for the
// user. The shim is a separate executable (see
// docs/decisions/0061-shim-separate-executable-k8s-io-apiservers.md); this
// package only starts, watches and stops it, and copies its
// admin kubeconfig to where the user looks for it.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiffnode/skiff/internal/supervisor"
)

// The shim's Service range (skiff-apiserver's default
// --service-cluster-ip-range) and, in it, the cluster DNS's address,
// kubeadm's: the agent's default --cluster-dns with --control-plane.
const (
	ServiceCIDR       = "10.96.0.0/12"
	DefaultClusterDNS = "10.96.0.10"
)

// restartPolicy: 1 s doubling to 30 s, forgotten after a minute of running.
var restartPolicy = supervisor.Policy{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute}

// Config says how to run the shim. Binary and DataDir are required.
type Config struct {
	// Binary is the skiff-apiserver executable.
	Binary string
	// DataDir is the shim's --data-dir (etcd, pki, kubeconfigs).
	DataDir string
	// NodeName, when set, is the node the shim issues a node kubeconfig
	// for (--node-name): the agent joins with that identity.
	NodeName string
	// BindAddress and Port of the API (defaults 127.0.0.1 and 6443).
	BindAddress string
	Port        int
	// EtcdServers: an external etcd instead of the embedded one.
	EtcdServers []string
	// AdminKubeconfig, when set, receives a copy (0600) of the shim's
	// admin kubeconfig after every start.
	AdminKubeconfig string
	// NodeKubeletHost, when set, is where the shim reaches NodeName's
	// kubelet API (skiff-apiserver's --node-kubelet-host) instead of the
	// Node's addresses: the agent keeps it on loopback.
	NodeKubeletHost string
	// ServiceProxy runs the shim's service proxy for NodeName
	// (skiff-apiserver's --service-proxy): this machine's nftables carry
	// the Services' cluster IPs and node ports.
	ServiceProxy bool
	// ClusterDNS, when set, is the cluster IP at which the shim serves the
	// cluster DNS for NodeName (skiff-apiserver's --cluster-dns), for
	// ClusterDomain, answering DNSClients (the pod network) besides the
	// node itself.
	ClusterDNS    string
	ClusterDomain string
	DNSClients    []string
	// APIClients are the networks (the pod network) whose clients reach
	// the API on the node's address, the kubernetes Service's endpoint
	// (skiff-apiserver's --kubernetes-service-clients), besides the node.
	APIClients []string
	// LocalPathDir, when set, is where the shim's local-path provisioner
	// makes NodeName's PersistentVolumes, for its default StorageClass
	// (skiff-apiserver's --local-path-dir).
	LocalPathDir string
	// LogFile receives the shim's output (default <DataDir>/skiff-apiserver.log).
	LogFile string
	Logger  *slog.Logger
}

// Shim is a running, supervised skiff-apiserver. Its methods are safe for
// concurrent use.
type Shim struct {
	cfg    Config
	logger *slog.Logger
	d      *supervisor.Daemon
}

// CACertPath is the shim's CA certificate under its data directory
// (skiff-apiserver's <data-dir>/pki/ca.crt): it signs the shim's client
// certificates, its kubelet client certificate included.
func CACertPath(dataDir string) string { return filepath.Join(dataDir, "pki", "ca.crt") }

// FindBinary returns the skiff-apiserver executable: name if it contains a
// slash, else the one beside this executable, else the one on PATH.
func FindBinary(name string) (string, error) {
	if filepath.Base(name) != name {
		return name, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found beside this executable nor on PATH (make build puts it in bin/): %w", name, err)
	}
	return p, nil
}

// Start replaces a shim an earlier agent left running on DataDir, starts
// the shim, waits until it answers /readyz (bounded by ctx and a minute),
// copies the admin kubeconfig and supervises the shim: it is restarted
// whenever it exits, until Stop. ctx bounds only the start. On error
// nothing is left running.
func Start(ctx context.Context, cfg Config) (*Shim, error) {
	if cfg.Binary == "" || cfg.DataDir == "" {
		return nil, errors.New("control plane: binary and data directory are required")
	}
	if cfg.BindAddress == "" {
		cfg.BindAddress = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = 6443
	}
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(cfg.DataDir, "skiff-apiserver.log")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	s := &Shim{cfg: cfg, logger: cfg.Logger.With("component", "skiff-apiserver")}
	s.d = supervisor.NewDaemon(s.spec())
	if err := s.d.StopLeftover(ctx); err != nil {
		return nil, err
	}
	if err := s.d.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is the API's address.
func (s *Shim) URL() string {
	return "https://" + netJoin(s.cfg.BindAddress, s.cfg.Port)
}

// NodeKubeconfig is the node identity's kubeconfig the shim writes.
func (s *Shim) NodeKubeconfig() string { return filepath.Join(s.cfg.DataDir, "node.kubeconfig") }

// AdminKubeconfig is the shim's own copy of the admin kubeconfig.
func (s *Shim) AdminKubeconfig() string { return filepath.Join(s.cfg.DataDir, "admin.kubeconfig") }

// Pid is the process ID of the latest shim (maybe exited).
func (s *Shim) Pid() int { return s.d.Pid() }

// Restarts is how often the shim has been restarted.
func (s *Shim) Restarts() int { return s.d.Restarts() }

// Done is closed when supervision has ended (after Stop, or when another
// agent took over DataDir).
func (s *Shim) Done() <-chan struct{} { return s.d.Done() }

// Stop ends supervision, then stops the shim: SIGTERM, SIGKILL when ctx
// ends first. Pods are not affected. Idempotent; blocking.
func (s *Shim) Stop(ctx context.Context) error { return s.d.Stop(ctx) }

func (s *Shim) pidFile() string { return filepath.Join(s.cfg.DataDir, "skiff-apiserver.pid") }

// args are the shim's flags; --data-dir is also what LeftoverPid matches.
func (s *Shim) args() []string {
	a := []string{"--data-dir", s.cfg.DataDir, "--bind-address", s.cfg.BindAddress, "--secure-port", strconv.Itoa(s.cfg.Port)}
	if s.cfg.NodeName != "" {
		a = append(a, "--node-name", s.cfg.NodeName)
		if s.cfg.NodeKubeletHost != "" {
			a = append(a, "--node-kubelet-host", s.cfg.NodeKubeletHost)
		}
		for _, c := range s.cfg.APIClients {
			a = append(a, "--kubernetes-service-clients", c)
		}
		if s.cfg.ServiceProxy {
			a = append(a, "--service-proxy")
		}
		if s.cfg.ClusterDNS != "" {
			a = append(a, "--cluster-dns", s.cfg.ClusterDNS, "--cluster-domain", s.cfg.ClusterDomain)
			for _, c := range s.cfg.DNSClients {
				a = append(a, "--cluster-dns-clients", c)
			}
		}
		if s.cfg.LocalPathDir != "" {
			a = append(a, "--local-path-dir", s.cfg.LocalPathDir)
		}
	}
	for _, e := range s.cfg.EtcdServers {
		a = append(a, "--etcd-servers", e)
	}
	return a
}
