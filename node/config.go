package node

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config is everything a node is assembled from: plain values, the
// kubelet's flags as `skiff agent` parses them (cmd/skiff binds each flag
// to a field; the names follow the kubelet's). Validate checks it and
// completes what is derived from it.
type Config struct {
	PodManifestPath  string
	RuntimeEndpoint  string
	RootDir          string
	HostnameOverride string
	PodLogsDir       string
	ReadOnlyPort     int
	Address          string
	Verbosity        int
	PodCIDR          string
	CNIBinDir        string
	PauseBinary      string
	ResolvConf       string
	ClusterDomain    string
	// ClusterDNS are the cluster DNS servers' IP addresses (the
	// kubelet's --cluster-dns); none: pods of a ClusterFirst policy get
	// the node's resolv.conf.
	ClusterDNS     []string
	RuntimeTimeout time.Duration
	// PodsPerShim is how many pods share one runc shim (--pods-per-shim):
	// 0 picks DefaultPodsPerShim with the managed containerd and 1 (one
	// shim per pod) with an external runtime.
	PodsPerShim       int
	MaxParallelStarts int
	MaxParallelProbes int
	// MaxContainerRestartPeriod caps the restart back-off (the kubelet's
	// crashLoopBackOff.maxContainerRestartPeriod, 1s to 300s).
	MaxContainerRestartPeriod time.Duration
	Resources                 ResourcesConfig
	Security                  SecurityConfig
	Pull                      PullConfig
	Registry                  RegistryConfig
	GC                        GCConfig
	API                       APIConfig
	ControlPlane              ControlPlaneConfig
	KubeletAPI                KubeletAPIConfig
	Shutdown                  ShutdownConfig
}

// joinsAPIServer says whether the node joins an API server: one given by
// --kubeconfig, or its own (--control-plane).
func (c *Config) joinsAPIServer() bool {
	return c.API.Kubeconfig != "" || c.ControlPlane.Enabled
}

// Validate returns the first setting that cannot work, naming its flag,
// and completes the derived values (the shutdown grace periods by
// priority). Run calls it; calling it again is harmless.
func (c *Config) Validate() error {
	if c.API.OfflinePods && !c.joinsAPIServer() {
		return errors.New("--offline-pods: needs an API server (--kubeconfig or --control-plane); static pods run without one anyway")
	}
	if c.PodsPerShim < 0 {
		return fmt.Errorf("--pods-per-shim %d: want 0 (the default: %d with the managed containerd, 1 with an external runtime) or a positive number", c.PodsPerShim, DefaultPodsPerShim)
	}
	if c.MaxParallelStarts < 0 {
		return fmt.Errorf("--max-parallel-starts %d: want 0 (adaptive, the default) or a positive upper bound", c.MaxParallelStarts)
	}
	for _, s := range c.ClusterDNS {
		if net.ParseIP(s) == nil {
			return fmt.Errorf("--cluster-dns %q: not an IP address (clusterDNS)", s)
		}
	}
	if p := c.MaxContainerRestartPeriod; p < time.Second || p > 300*time.Second {
		return fmt.Errorf("--max-container-restart-period %s: must be between 1s and 300s (crashLoopBackOff.maxContainerRestartPeriod)", p)
	}
	if p := c.Resources.CPUCFSQuotaPeriod; p < time.Millisecond || p > time.Second {
		return fmt.Errorf("--cpu-cfs-quota-period %s: must be between 1ms and 1sec, inclusive (cpuCFSQuotaPeriod)", p)
	}
	if f := c.Resources.MemoryThrottlingFactor; f != 0 && !(f > 0 && f <= 1) {
		return fmt.Errorf("--memory-throttling-factor %v: must be greater than 0 and at most 1 (memoryThrottlingFactor; 0: none)", f)
	}
	if err := c.Pull.config().Validate(); err != nil {
		return err
	}
	if err := c.GC.validate(); err != nil {
		return err
	}
	if err := c.Shutdown.resolve(); err != nil {
		return err
	}
	if err := c.ControlPlane.validate(&c.API); err != nil {
		return err
	}
	if err := c.ControlPlane.defaultClusterDNS(&c.ClusterDNS, c.ClusterDomain); err != nil {
		return err
	}
	if err := c.KubeletAPI.validate(c.joinsAPIServer()); err != nil {
		return err
	}
	if c.joinsAPIServer() {
		if err := c.API.validate(); err != nil {
			return err
		}
	}
	if c.API.Bootstrap != "" && c.API.Kubeconfig == "" {
		return errors.New("--bootstrap-kubeconfig needs --kubeconfig: the path the node's kubeconfig is written to")
	}
	if c.API.RotateCerts && c.API.Kubeconfig == "" {
		return errors.New("--rotate-certificates needs --kubeconfig: it renews that kubeconfig's client certificate")
	}
	return nil
}
