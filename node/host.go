package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/internal/nodestatus"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/runtime"
)

// nodeName is --hostname-override, else the hostname, lower-cased.
func nodeName(override string) (string, error) {
	if override != "" {
		return strings.ToLower(override), nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return strings.ToLower(h), nil
}

func nodeIPs(log *slog.Logger) []string {
	ips, err := network.NodeIPs()
	if err != nil {
		log.Warn("node IPs", "err", err)
	}
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

// podDNS is the agent's Config.DNS: network.PodDNS with the node's
// resolv.conf and cluster DNS, and the kubelet's MissingClusterDNS warning
// where a pod falls back to the node's resolv.conf. A resolv.conf that does
// not exist leaves the runtime's default.
func podDNS(resolvConf string, cluster network.ClusterDNS) func(*v1.Pod) (*runtime.DNSConfig, string, error) {
	return func(pod *v1.Pod) (*runtime.DNSConfig, string, error) {
		var warning string
		if cluster.Missing(string(pod.Spec.DNSPolicy), pod.Spec.HostNetwork) {
			warning = network.MissingClusterDNSMessage
		}
		dns, err := network.PodDNS(resolvConf, cluster, pod.Namespace, string(pod.Spec.DNSPolicy), pod.Spec.DNSConfig, pod.Spec.HostNetwork)
		if errors.Is(err, os.ErrNotExist) {
			return nil, warning, nil
		}
		return dns, warning, err
	}
}

// parallelExecProbes is --max-parallel-exec-probes with its default.
func parallelExecProbes(flagValue int) int {
	switch {
	case flagValue < 0:
		return 0 // no bound
	case flagValue == 0:
		return max(2, goruntime.NumCPU())
	}
	return flagValue
}

// nodeUsage reads the machine's cpu and memory use from /proc for the
// summary's node stats (agent.Config.NodeUsage) and, on cgroup v2
// (withPressure), its PSI, as the kubelet reports the root cgroup's.
func nodeUsage(withPressure bool) func() (*cgroups.Usage, error) {
	return func() (*cgroups.Usage, error) {
		u, err := nodestatus.ReadUsage(os.DirFS("/"))
		if err != nil {
			return nil, fmt.Errorf("node usage: %w", err)
		}
		out := &cgroups.Usage{CPUUsageNanoSeconds: u.CPUUsageNanoSeconds, MemoryUsageBytes: u.MemoryUsageBytes, WorkingSetBytes: u.WorkingSetBytes}
		if withPressure {
			out.Pressure = cgroups.MachinePressure()
		}
		return out, nil
	}
}
