package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestValidateSecurity_G15 checks each security-context rule on a mutated
// valid pod: the API server's messages, and skiff's for what it cannot do.
// want lists substrings that must all appear; nil: no errors.
func TestValidateSecurity_G15(t *testing.T) {
	csc := func(p *v1.Pod) *v1.SecurityContext {
		if p.Spec.Containers[0].SecurityContext == nil {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{}
		}
		return p.Spec.Containers[0].SecurityContext
	}
	seccomp := func(typ v1.SeccompProfileType, local *string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: typ, LocalhostProfile: local}
	}
	apparmor := func(typ v1.AppArmorProfileType, local *string) *v1.AppArmorProfile {
		return &v1.AppArmorProfile{Type: typ, LocalhostProfile: local}
	}
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   []string
	}{
		// Accepted.
		{"a hardened pod", func(p *v1.Pod) {
			p.Spec.HostPID = true
			p.Spec.HostUsers = ptr(true)
			sc := p.Spec.SecurityContext
			sc.FSGroup, sc.SupplementalGroups = ptr(int64(2000)), []int64{3000}
			sc.FSGroupChangePolicy = ptr(v1.FSGroupChangeOnRootMismatch)
			sc.SupplementalGroupsPolicy = ptr(v1.SupplementalGroupsPolicyMerge)
			sc.Sysctls = []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "net/ipv4/ip_local_port_range", Value: "1 2"}}
			sc.SeccompProfile = seccomp(v1.SeccompProfileTypeRuntimeDefault, nil)
			sc.AppArmorProfile = apparmor(v1.AppArmorProfileTypeUnconfined, nil)
			sc.SELinuxOptions = &v1.SELinuxOptions{Level: "s0:c1"}
			c := csc(p)
			c.Capabilities = &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "cap_net_raw"}, Drop: []v1.Capability{"ALL"}}
			c.ReadOnlyRootFilesystem, c.AllowPrivilegeEscalation = ptr(true), ptr(false)
			c.ProcMount = ptr(v1.DefaultProcMount)
			c.SeccompProfile = seccomp(v1.SeccompProfileTypeLocalhost, ptr("profiles/audit.json"))
			c.AppArmorProfile = apparmor(v1.AppArmorProfileTypeLocalhost, ptr("k8s-deny-write"))
		}, nil},
		{"shareProcessNamespace alone", func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }, nil},
		{"privileged with escalation allowed", func(p *v1.Pod) {
			csc(p).Privileged, csc(p).AllowPrivilegeEscalation = ptr(true), ptr(true)
		}, nil},

		// Pod level.
		{"hostUsers false, procMount Unmasked", func(p *v1.Pod) {
			p.Spec.HostUsers = ptr(false)
			csc(p).ProcMount = ptr(v1.UnmaskedProcMount)
		}, nil},
		{"hostUsers false with host namespaces", func(p *v1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		}, []string{"spec.hostNetwork: Forbidden: when `hostUsers` is false", "spec.HostPID: Forbidden: when `hostUsers` is false",
			"spec.HostIPC: Forbidden: when `hostUsers` is false"}},
		{"shareProcessNamespace with hostPID", func(p *v1.Pod) {
			p.Spec.HostPID, p.Spec.ShareProcessNamespace = true, ptr(true)
		}, []string{"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"}},
		{"fsGroup range", func(p *v1.Pod) { p.Spec.SecurityContext.FSGroup = ptr(int64(-1)) },
			[]string{"spec.securityContext.fsGroup: Invalid value: -1"}},
		{"fsGroupChangePolicy Always", func(p *v1.Pod) {
			p.Spec.SecurityContext.FSGroupChangePolicy = ptr(v1.FSGroupChangeAlways)
		}, nil},
		{"fsGroupChangePolicy value", func(p *v1.Pod) {
			p.Spec.SecurityContext.FSGroupChangePolicy = ptr(v1.PodFSGroupChangePolicy("Sometimes"))
		}, []string{`spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"`}},
		{"fsGroupChangePolicy empty", func(p *v1.Pod) {
			p.Spec.SecurityContext.FSGroupChangePolicy = ptr(v1.PodFSGroupChangePolicy(""))
		}, []string{`spec.securityContext.fsGroupChangePolicy: Unsupported value: "": supported values: "Always", "OnRootMismatch"`}},
		{"supplementalGroups range", func(p *v1.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{1, 1 << 32} },
			[]string{"spec.securityContext.supplementalGroups[1]: Invalid value: 4294967296"}},
		{"supplementalGroupsPolicy value", func(p *v1.Pod) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr(v1.SupplementalGroupsPolicy("Loose"))
		}, []string{`spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose"`}},
		{"supplementalGroupsPolicy Strict (the runtime's support is the node's admission)", func(p *v1.Pod) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr(v1.SupplementalGroupsPolicyStrict)
		}, nil},
		{"supplementalGroupsPolicy unknown", func(p *v1.Pod) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr(v1.SupplementalGroupsPolicy("Loose"))
		}, []string{`spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose"`}},
		{"sysctl name required", func(p *v1.Pod) { p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Value: "1"}} },
			[]string{"spec.securityContext.sysctls[0].name: Required value"}},
		{"sysctl name format", func(p *v1.Pod) { p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "Net.Core..x", Value: "1"}} },
			[]string{`spec.securityContext.sysctls[0].name: Invalid value: "Net.Core..x": must have at most 253 characters and match regex`}},
		{"sysctl duplicate", func(p *v1.Pod) {
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "kernel.sem", Value: "1"}, {Name: "kernel.sem", Value: "2"}}
		}, []string{`spec.securityContext.sysctls[1].name: Duplicate value: "kernel.sem"`}},
		{"net sysctl with hostNetwork", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = nil
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}
		}, []string{`spec.securityContext.sysctls[0].name: Invalid value: "net.ipv4.tcp_syncookies": may not be specified when 'hostNetwork' is true`}},
		{"IPC sysctl with hostIPC", func(p *v1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}
		}, []string{`spec.securityContext.sysctls[0].name: Invalid value: "kernel.shm_rmid_forced": may not be specified when 'hostIPC' is true`}},
		{"pod seccomp type required", func(p *v1.Pod) { p.Spec.SecurityContext.SeccompProfile = seccomp("", nil) },
			[]string{"spec.securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set"}},
		{"pod appArmor type", func(p *v1.Pod) { p.Spec.SecurityContext.AppArmorProfile = apparmor("Strict", nil) },
			[]string{`spec.securityContext.appArmorProfile.type: Unsupported value: "Strict"`}},

		// Container level.
		{"seccomp type", func(p *v1.Pod) { csc(p).SeccompProfile = seccomp("Default", nil) },
			[]string{`spec.containers[0].securityContext.seccompProfile.type: Unsupported value: "Default"`}},
		{"seccomp Localhost needs a profile", func(p *v1.Pod) { csc(p).SeccompProfile = seccomp(v1.SeccompProfileTypeLocalhost, nil) },
			[]string{"spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"}},
		{"seccomp profile only with Localhost", func(p *v1.Pod) {
			csc(p).SeccompProfile = seccomp(v1.SeccompProfileTypeRuntimeDefault, ptr("p.json"))
		}, []string{`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "p.json": can only be set when seccomp type is Localhost`}},
		{"seccomp profile relative", func(p *v1.Pod) {
			csc(p).SeccompProfile = seccomp(v1.SeccompProfileTypeLocalhost, ptr("/etc/p.json"))
		}, []string{`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "/etc/p.json": must be a relative path`}},
		{"seccomp profile without ..", func(p *v1.Pod) {
			csc(p).SeccompProfile = seccomp(v1.SeccompProfileTypeLocalhost, ptr("a/../../p.json"))
		}, []string{`localhostProfile: Invalid value: "a/../../p.json": must not contain '..'`}},
		{"appArmor Localhost needs a profile", func(p *v1.Pod) { csc(p).AppArmorProfile = apparmor(v1.AppArmorProfileTypeLocalhost, ptr("")) },
			[]string{"spec.containers[0].securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"}},
		{"appArmor profile padded", func(p *v1.Pod) { csc(p).AppArmorProfile = apparmor(v1.AppArmorProfileTypeLocalhost, ptr(" p ")) },
			[]string{`appArmorProfile.localhostProfile: Invalid value: " p ": must not be padded with whitespace`}},
		{"appArmor profile only with Localhost", func(p *v1.Pod) {
			csc(p).AppArmorProfile = apparmor(v1.AppArmorProfileTypeRuntimeDefault, ptr("p"))
		}, []string{`appArmorProfile.localhostProfile: Invalid value: "p": can only be set when AppArmor type is Localhost`}},
		{"appArmor type required", func(p *v1.Pod) { csc(p).AppArmorProfile = apparmor("", nil) },
			[]string{"spec.containers[0].securityContext.appArmorProfile.type: Required value"}},
		{"procMount value", func(p *v1.Pod) { csc(p).ProcMount = ptr(v1.ProcMountType("Masked")) },
			[]string{`spec.containers[0].securityContext.procMount: Unsupported value: "Masked"`}},
		{"procMount Unmasked needs user namespaces", func(p *v1.Pod) { csc(p).ProcMount = ptr(v1.UnmaskedProcMount) },
			[]string{`spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": ` + "`hostUsers` must be false to use `Unmasked`"}},
		{"capability names", func(p *v1.Pod) {
			csc(p).Capabilities = &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "NET_ADMINS"}, Drop: []v1.Capability{"CAP_FOO"}}
		}, []string{`spec.containers[0].securityContext.capabilities.add[1]: Invalid value: "NET_ADMINS": must be a Linux capability`,
			`spec.containers[0].securityContext.capabilities.drop[0]: Invalid value: "CAP_FOO"`}},
		{"no escalation and privileged", func(p *v1.Pod) {
			csc(p).Privileged, csc(p).AllowPrivilegeEscalation = ptr(true), ptr(false)
		}, []string{"spec.containers[0].securityContext: Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"}},
		{"no escalation and CAP_SYS_ADMIN", func(p *v1.Pod) {
			csc(p).AllowPrivilegeEscalation = ptr(false)
			csc(p).Capabilities = &v1.Capabilities{Add: []v1.Capability{"CAP_SYS_ADMIN"}}
		}, []string{"spec.containers[0].securityContext: Invalid value: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"}},
		{"init containers are checked too", func(p *v1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr(v1.ProcMountType("x"))}
		}, []string{`spec.initContainers[0].securityContext.procMount: Unsupported value: "x"`}},
		{"container runAsUser range", func(p *v1.Pod) { csc(p).RunAsUser = ptr(int64(-2)) },
			[]string{"spec.containers[0].securityContext.runAsUser: Invalid value: -2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			checkValidate(t, pod, tt.want)
		})
	}
}
