package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// reasonSysctlForbidden is the kubelet's rejection reason for a pod with a
// sysctl the node does not allow.
const reasonSysctlForbidden = "SysctlForbidden"

// safeSysctl is one of the kubelet's safe sysctls (pkg/kubelet/sysctl,
// v1.34) and the first kernel (major, minor) that namespaces it.
type safeSysctl struct {
	name         string
	major, minor int
}

var kubeletSafeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", major: 3, minor: 16},
	{name: "net.ipv4.tcp_keepalive_time", major: 4, minor: 5},
	{name: "net.ipv4.tcp_fin_timeout", major: 4, minor: 6},
	{name: "net.ipv4.tcp_keepalive_intvl", major: 4, minor: 5},
	{name: "net.ipv4.tcp_keepalive_probes", major: 4, minor: 5},
	{name: "net.ipv4.tcp_rmem", major: 4, minor: 15},
	{name: "net.ipv4.tcp_wmem", major: 4, minor: 15},
}

// safeSysctls are the safe sysctls the kernel release (uname -r, e.g.
// "6.1.0-18-amd64") namespaces; "" or an unparsable release: all of them.
// Pure.
func safeSysctls(kernel string) []string {
	major, minor, ok := kernelVersion(kernel)
	var out []string
	for _, s := range kubeletSafeSysctls {
		if ok && (major < s.major || major == s.major && minor < s.minor) {
			continue
		}
		out = append(out, s.name)
	}
	return out
}

func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}

// sysctlPattern is a sysctl name or a prefix ending in "*", with dots or
// slashes (the API server's pattern format).
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9]([-_a-z0-9]*[a-z0-9])?\*?|\*)$`)

// sysctlAllowlist is the kubelet's patternAllowlist: the sysctls (and
// prefixes) a pod may set, each with the namespace it lives in.
type sysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// newSysctlAllowlist compiles the safe sysctls and the allowed unsafe
// patterns; a pattern that is malformed or not known to be namespaced is an
// error, as in the kubelet.
func newSysctlAllowlist(safe, unsafe []string) (*sysctlAllowlist, error) {
	a := &sysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range append(append([]string(nil), safe...), unsafe...) {
		if len(p) > 253 || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most 253 characters and be a name or a prefix ending in *, like net.core.somaxconn or kernel.msg*", p)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("sysctl %q is not known to be namespaced (only kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.* and net.* are)", p)
		}
		if prefixed {
			a.prefixes[nameOrPrefix] = ns
		} else {
			a.names[nameOrPrefix] = ns
		}
	}
	return a, nil
}

// check is nil if pod may set sysctl name, else why not (the kubelet's
// messages).
func (a *sysctlAllowlist) check(name string, hostNet, hostIPC bool) error {
	name = normalizeSysctl(name)
	ns, found := a.names[name]
	if !found {
		for p, pns := range a.prefixes {
			if strings.HasPrefix(name, p) {
				ns, found = pns, true
				break
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", name)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNet:
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// admit is the kubelet's sysctl admission: the first sysctl the pod may
// not set rejects it (reason SysctlForbidden); nil: admitted. Pure.
func (a *sysctlAllowlist) admit(pod *v1.Pod) *podFailure {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return nil
	}
	for _, s := range psc.Sysctls {
		if err := a.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return &podFailure{Reason: reasonSysctlForbidden, Message: "Pod was rejected: forbidden sysctl: " + err.Error()}
		}
	}
	return nil
}

// normalizeSysctl turns a sysctl name with slashes into the dotted form.
func normalizeSysctl(name string) string { return utilsysctl.NormalizeName(name) }
