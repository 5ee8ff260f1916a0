package node

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/network"
)

// TestPodDNS: the agent's DNS function gives cluster-DNS pods the cluster
// servers, warns (MissingClusterDNS) only where a cluster-DNS pod falls
// back to the node's resolv.conf, and leaves the runtime's default where
// the resolv.conf does not exist.
func TestPodDNS(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.org\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := func(policy v1.DNSPolicy, hostNet bool) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet}}
	}
	cluster := network.ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}
	tests := []struct {
		name        string
		resolv      string
		cluster     network.ClusterDNS
		pod         *v1.Pod
		wantServers []string
		wantWarning bool
	}{
		{"cluster DNS", resolv, cluster, pod(v1.DNSClusterFirst, false), []string{"10.96.0.10"}, false},
		{"no cluster DNS: the node's, warned", resolv, network.ClusterDNS{Domain: "cluster.local"}, pod(v1.DNSClusterFirst, false), []string{"192.0.2.53"}, true},
		{"host network ClusterFirst: the node's, no warning", resolv, network.ClusterDNS{}, pod(v1.DNSClusterFirst, true), []string{"192.0.2.53"}, false},
		{"Default: no warning", resolv, network.ClusterDNS{}, pod(v1.DNSDefault, false), []string{"192.0.2.53"}, false},
		{"no resolv.conf: the runtime's default, still warned", filepath.Join(t.TempDir(), "none"), network.ClusterDNS{}, pod(v1.DNSClusterFirst, false), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dns, warning, err := podDNS(tt.resolv, tt.cluster)(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			var servers []string
			if dns != nil {
				servers = dns.Servers
			}
			if !slices.Equal(servers, tt.wantServers) || (warning != "") != tt.wantWarning {
				t.Errorf("servers %v, warning %q; want %v, warning %v", servers, warning, tt.wantServers, tt.wantWarning)
			}
			if tt.wantWarning && warning != network.MissingClusterDNSMessage {
				t.Errorf("warning %q, want the kubelet's message", warning)
			}
		})
	}
}
