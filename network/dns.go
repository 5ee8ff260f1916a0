package network

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// Limits on a pod's resolv.conf, as the kubelet enforces them
// (k8s.io/kubernetes/pkg/apis/core/validation).
const (
	MaxDNSNameservers     = 3
	MaxDNSSearchPaths     = 32
	MaxDNSSearchListChars = 2048
	maxSearchPathLength   = 253 // a DNS subdomain
)

// DNSConfigInput is the pod's spec.dnsConfig. It is the Kubernetes type, so
// callers pass pod.Spec.DNSConfig as is.
type DNSConfigInput = v1.PodDNSConfig

// ClusterDNS is the node's cluster DNS: the kubelet's clusterDNS (Servers,
// IP addresses; none: the node has no cluster DNS) and clusterDomain.
type ClusterDNS struct {
	Servers []string
	Domain  string
}

// MissingClusterDNSMessage is the kubelet's message of the warning event
// MissingClusterDNS (pkg/kubelet/network/dns), which it records on the
// node and, prefixed with `pod: "<name>_<namespace>(<uid>)". `, on the pod.
const MissingClusterDNSMessage = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`

// clusterPolicy reports whether a pod of dnsPolicy uses the cluster DNS:
// ClusterFirstWithHostNet, and ClusterFirst (or "") unless the pod is on
// the host network, where it means Default.
func clusterPolicy(dnsPolicy string, hostNetwork bool) bool {
	switch v1.DNSPolicy(dnsPolicy) {
	case v1.DNSClusterFirstWithHostNet:
		return true
	case v1.DNSClusterFirst, "":
		return !hostNetwork
	}
	return false
}

// Missing reports whether PodDNS falls back from a cluster-DNS policy to
// the node's resolv.conf for this pod, because c has no servers; the
// kubelet records the warning event MissingClusterDNS then.
func (c ClusterDNS) Missing(dnsPolicy string, hostNetwork bool) bool {
	return len(c.Servers) == 0 && clusterPolicy(dnsPolicy, hostNetwork)
}

// PodDNS computes the resolv.conf content of a pod in namespace with the
// kubelet's semantics (pkg/kubelet/network/dns, GetPodDNS):
//
//   - "None": only podDNSConfig.
//   - "Default": the host's resolv.conf at resolvConfPath.
//   - "ClusterFirst" (and "") off the host network, and
//     "ClusterFirstWithHostNet": the cluster's servers only, the searches
//     <namespace>.svc.<domain>, svc.<domain>, <domain> then the host's,
//     and the option ndots:5. Without cluster servers they fall back to
//     "Default" (see ClusterDNS.Missing); without a domain the searches
//     are the host's.
//
// With resolvConfPath "" the host's configuration is empty, and "Default"
// gets nameserver 127.0.0.1 and search "." (the kubelet's --resolv-conf=""
// behaviour). podDNSConfig (may be nil) is then merged: nameservers and
// searches appended without duplicates, options merged by name with the
// pod's winning. Finally the kubelet's limits apply: at most 3
// nameservers, 32 search paths, 2048 characters of search line, search
// paths longer than 253 characters dropped. An unknown policy is an error.
// Pure apart from reading resolvConfPath; safe for concurrent use.
func PodDNS(resolvConfPath string, cluster ClusterDNS, namespace, dnsPolicy string, podDNSConfig *DNSConfigInput, hostNetwork bool) (*runtime.DNSConfig, error) {
	switch v1.DNSPolicy(dnsPolicy) {
	case v1.DNSNone, v1.DNSDefault, v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, "":
	default:
		return nil, fmt.Errorf("invalid DNS policy %q", dnsPolicy)
	}
	cfg := &runtime.DNSConfig{}
	if resolvConfPath != "" && v1.DNSPolicy(dnsPolicy) != v1.DNSNone {
		host, err := readResolvConf(resolvConfPath)
		if err != nil {
			return nil, err
		}
		cfg = host
	}
	switch {
	case v1.DNSPolicy(dnsPolicy) == v1.DNSNone:
		// Empty base.
	case clusterPolicy(dnsPolicy, hostNetwork) && len(cluster.Servers) > 0:
		cfg.Servers = slices.Clone(cluster.Servers)
		if d := cluster.Domain; d != "" {
			cfg.Searches = omitDuplicates(append([]string{namespace + ".svc." + d, "svc." + d, d}, cfg.Searches...))
		}
		cfg.Options = []string{"ndots:5"}
	case resolvConfPath == "":
		cfg.Servers = []string{"127.0.0.1"}
		cfg.Searches = []string{"."}
	}
	if podDNSConfig != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, podDNSConfig.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, podDNSConfig.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, podDNSConfig.Options)
	}
	if len(cfg.Servers) > MaxDNSNameservers {
		cfg.Servers = cfg.Servers[:MaxDNSNameservers]
	}
	cfg.Searches = searchFitsLimits(cfg.Searches)
	return cfg, nil
}

// readResolvConf parses the nameserver, search and options lines of a
// resolv.conf like the kubelet: the last search line wins, trailing dots
// are trimmed, "." is dropped, and later options override earlier ones.
func readResolvConf(path string) (*runtime.DNSConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read resolv.conf: %w", err)
	}
	cfg := &runtime.DNSConfig{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				return nil, fmt.Errorf("read resolv.conf %s: nameserver line without address", path)
			}
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search":
			cfg.Searches = []string{}
			for _, s := range fields[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = appendOptions(cfg.Options, fields[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read resolv.conf %s: %w", path, err)
	}
	return cfg, nil
}

// appendOptions adds options, replacing an existing one with the same name.
func appendOptions(options []string, add ...string) []string {
	for _, opt := range add {
		name, _, _ := strings.Cut(opt, ":")
		replaced := false
		for i, old := range options {
			if oldName, _, _ := strings.Cut(old, ":"); oldName == name {
				options[i], replaced = opt, true
				break
			}
		}
		if !replaced {
			options = append(options, opt)
		}
	}
	return options
}

// mergeDNSOptions merges the pod's options into the existing ones; the pod
// wins on equal names. The result is sorted (the kubelet's order is that of
// a Go map, i.e. random).
func mergeDNSOptions(existing []string, pod []v1.PodDNSConfigOption) []string {
	byName := make(map[string]string, len(existing)+len(pod))
	for _, op := range existing {
		name, value, _ := strings.Cut(op, ":")
		byName[name] = value
	}
	for _, op := range pod {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		byName[op.Name] = value
	}
	if len(byName) == 0 {
		return nil
	}
	out := make([]string, 0, len(byName))
	for name, value := range byName {
		if value != "" {
			name += ":" + value
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func omitDuplicates(strs []string) []string {
	seen := make(map[string]bool, len(strs))
	var out []string
	for _, s := range strs {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// searchFitsLimits applies the kubelet's search-path limits.
func searchFitsLimits(search []string) []string {
	if len(search) > MaxDNSSearchPaths {
		search = search[:MaxDNSSearchPaths]
	}
	kept := search[:0:0]
	for _, s := range search {
		if len(s) <= maxSearchPathLength {
			kept = append(kept, s)
		}
	}
	search = kept
	if lineLen := len(strings.Join(search, " ")); lineLen > MaxDNSSearchListChars {
		cut, cutLen := 0, 0
		for i := len(search) - 1; i >= 0; i-- {
			cutLen += len(search[i]) + 1
			cut++
			if lineLen-cutLen <= MaxDNSSearchListChars {
				break
			}
		}
		search = search[:len(search)-cut]
	}
	return search
}
