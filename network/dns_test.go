package network

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

const hostResolv = `# generated
nameserver 10.0.0.10
nameserver 10.0.0.11
; comment
search corp.example. lab.example .
options ndots:2 timeout:1
options timeout:3
`

func TestPodDNS(t *testing.T) {
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte(hostResolv), 0o644); err != nil {
		t.Fatal(err)
	}
	host := &runtime.DNSConfig{
		Servers:  []string{"10.0.0.10", "10.0.0.11"},
		Searches: []string{"corp.example", "lab.example"},
		Options:  []string{"ndots:2", "timeout:3"},
	}
	str := func(s string) *string { return &s }
	cluster := ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}
	many := make([]string, 40)
	for i := range many {
		many[i] = "s" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + ".example"
	}
	tests := []struct {
		name        string
		resolv      string
		policy      string
		podDNS      *DNSConfigInput
		hostNetwork bool
		cluster     ClusterDNS
		want        *runtime.DNSConfig
		wantErr     string
	}{
		{name: "Default uses host resolv.conf", resolv: resolv, policy: "Default", want: host},
		{name: "ClusterFirst falls back to Default", resolv: resolv, policy: "ClusterFirst", want: host},
		{name: "empty policy is ClusterFirst", resolv: resolv, policy: "", want: host},
		{name: "ClusterFirstWithHostNet falls back", resolv: resolv, policy: "ClusterFirstWithHostNet", hostNetwork: true, want: host},
		{name: "None without dnsConfig is empty", resolv: resolv, policy: "None", want: &runtime.DNSConfig{}},
		{
			name: "None takes only dnsConfig", resolv: resolv, policy: "None",
			podDNS: &DNSConfigInput{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: str("1")}, {Name: "edns0"}}},
			want:   &runtime.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"edns0", "ndots:1"}},
		},
		{
			name: "dnsConfig merges: appended, deduplicated, pod options win", resolv: resolv, policy: "Default",
			podDNS: &DNSConfigInput{Nameservers: []string{"10.0.0.11", "1.1.1.1"}, Searches: []string{"pod.example", "corp.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: str("5")}}},
			want:   &runtime.DNSConfig{Servers: []string{"10.0.0.10", "10.0.0.11", "1.1.1.1"}, Searches: []string{"corp.example", "lab.example", "pod.example"}, Options: []string{"ndots:5", "timeout:3"}},
		},
		{
			name: "at most 3 nameservers", resolv: resolv, policy: "Default",
			podDNS: &DNSConfigInput{Nameservers: []string{"1.1.1.1", "8.8.8.8"}},
			want:   &runtime.DNSConfig{Servers: []string{"10.0.0.10", "10.0.0.11", "1.1.1.1"}, Searches: host.Searches, Options: host.Options},
		},
		{
			name: "at most 32 search paths", policy: "None",
			podDNS: &DNSConfigInput{Searches: many},
			want:   &runtime.DNSConfig{Searches: omitDuplicates(many)[:32]},
		},
		{
			name: "overlong search path dropped", policy: "None",
			podDNS: &DNSConfigInput{Searches: []string{strings.Repeat("a", 254), "ok.example"}},
			want:   &runtime.DNSConfig{Searches: []string{"ok.example"}},
		},
		{
			name: "no resolv.conf: localhost", resolv: "", policy: "Default",
			want: &runtime.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}},
		},
		{
			name: "ClusterFirst with cluster DNS: its servers, cluster searches then the host's, ndots:5", resolv: resolv, policy: "ClusterFirst", cluster: cluster,
			want: &runtime.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example"}, Options: []string{"ndots:5"}},
		},
		{
			name: "ClusterFirstWithHostNet on the host network uses cluster DNS", resolv: resolv, policy: "ClusterFirstWithHostNet", hostNetwork: true, cluster: cluster,
			want: &runtime.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example"}, Options: []string{"ndots:5"}},
		},
		{name: "ClusterFirst on the host network is Default", resolv: resolv, policy: "ClusterFirst", hostNetwork: true, cluster: cluster, want: host},
		{name: "Default ignores cluster DNS", resolv: resolv, policy: "Default", cluster: cluster, want: host},
		{
			name: "cluster DNS without a domain keeps the host's searches", resolv: resolv, policy: "ClusterFirst", cluster: ClusterDNS{Servers: []string{"10.96.0.10", "10.96.0.11"}},
			want: &runtime.DNSConfig{Servers: []string{"10.96.0.10", "10.96.0.11"}, Searches: host.Searches, Options: []string{"ndots:5"}},
		},
		{
			name: "cluster DNS without resolv.conf: cluster searches only", resolv: "", policy: "ClusterFirst", cluster: cluster,
			want: &runtime.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}},
		},
		{
			name: "cluster DNS then dnsConfig merged", resolv: resolv, policy: "ClusterFirst", cluster: cluster,
			podDNS: &DNSConfigInput{Nameservers: []string{"1.1.1.1"}, Searches: []string{"svc.cluster.local", "x.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: str("2")}, {Name: "edns0"}}},
			want:   &runtime.DNSConfig{Servers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example", "x.example"}, Options: []string{"edns0", "ndots:2"}},
		},
		{name: "None ignores cluster DNS and resolv.conf", resolv: filepath.Join(dir, "nope"), policy: "None", cluster: cluster, want: &runtime.DNSConfig{}},
		{name: "missing resolv.conf", resolv: filepath.Join(dir, "nope"), policy: "Default", wantErr: "read resolv.conf"},
		{name: "bad policy", resolv: resolv, policy: "Bogus", wantErr: "invalid DNS policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PodDNS(tt.resolv, tt.cluster, "ns1", tt.policy, tt.podDNS, tt.hostNetwork)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("PodDNS =\n %#v\nwant\n %#v", got, tt.want)
			}
		})
	}
}

func TestSearchLineLimit(t *testing.T) {
	// 10 paths of 250 characters: the joined line exceeds 2048 characters,
	// so paths are cut from the end until it fits.
	var search []string
	for i := 0; i < 10; i++ {
		search = append(search, strings.Repeat(string(rune('a'+i)), 250))
	}
	got := searchFitsLimits(search)
	if n := len(strings.Join(got, " ")); n > MaxDNSSearchListChars || len(got) != 8 {
		t.Fatalf("kept %d paths, %d chars", len(got), n)
	}
}

// TestClusterDNSMissing: a cluster-DNS policy falls back (and warns) only
// when the node has no cluster DNS server.
func TestClusterDNSMissing(t *testing.T) {
	tests := []struct {
		policy      string
		hostNetwork bool
		want        bool
	}{
		{"ClusterFirst", false, true},
		{"", false, true},
		{"ClusterFirst", true, false},
		{"ClusterFirstWithHostNet", true, true},
		{"ClusterFirstWithHostNet", false, true},
		{"Default", false, false},
		{"None", false, false},
	}
	for _, tt := range tests {
		if got := (ClusterDNS{}).Missing(tt.policy, tt.hostNetwork); got != tt.want {
			t.Errorf("no servers: Missing(%q, %v) = %v, want %v", tt.policy, tt.hostNetwork, got, tt.want)
		}
		if (ClusterDNS{Servers: []string{"10.96.0.10"}}).Missing(tt.policy, tt.hostNetwork) {
			t.Errorf("with a server: Missing(%q, %v) = true, want false", tt.policy, tt.hostNetwork)
		}
	}
}
