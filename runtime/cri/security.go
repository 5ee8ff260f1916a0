package cri

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// pidMode is the CRI PID namespace mode of a sandbox's containers: the
// node's (hostPID), the sandbox's (shareProcessNamespace) or each its own.
func pidMode(sec *runtime.SandboxSecurity) runtimeapi.NamespaceMode {
	switch {
	case sec == nil:
		return runtimeapi.NamespaceMode_CONTAINER
	case sec.HostPID:
		return runtimeapi.NamespaceMode_NODE
	case sec.SharePID:
		return runtimeapi.NamespaceMode_POD
	}
	return runtimeapi.NamespaceMode_CONTAINER
}

// ipcMode is the node's IPC namespace with hostIPC, else the pod's.
func ipcMode(sec *runtime.SandboxSecurity) runtimeapi.NamespaceMode {
	if sec != nil && sec.HostIPC {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}

// applySandboxSecurity adds the pod-level security context to the
// sandbox's CRI config (the namespace options are set by namespaceOptions).
func applySandboxSecurity(lc *runtimeapi.LinuxPodSandboxConfig, sec *runtime.SandboxSecurity) {
	if sec == nil {
		return
	}
	sc := lc.SecurityContext
	sc.RunAsUser = int64Value(sec.RunAsUser)
	sc.RunAsGroup = int64Value(sec.RunAsGroup)
	sc.SupplementalGroups = sec.SupplementalGroups
	sc.SupplementalGroupsPolicy = groupsPolicy(sec.StrictGroups)
	sc.Seccomp = profileToCRI(sec.Seccomp)
	sc.SelinuxOptions = selinuxToCRI(sec.SELinux)
	if len(sec.Sysctls) > 0 {
		lc.Sysctls = sec.Sysctls
	}
}

// applyContainerSecurity adds a container's security context to its CRI
// security context. Capability names go as given ("NET_ADMIN"): the
// runtime adds "CAP_", as with the kubelet.
func applyContainerSecurity(sc *runtimeapi.LinuxContainerSecurityContext, sec *runtime.ContainerSecurity) {
	if sec == nil {
		return
	}
	if len(sec.CapAdd) > 0 || len(sec.CapDrop) > 0 {
		sc.Capabilities = &runtimeapi.Capability{AddCapabilities: sec.CapAdd, DropCapabilities: sec.CapDrop}
	}
	sc.ReadonlyRootfs = sec.ReadOnlyRootfs
	sc.NoNewPrivs = sec.NoNewPrivs
	sc.SupplementalGroups = sec.SupplementalGroups
	sc.SupplementalGroupsPolicy = groupsPolicy(sec.StrictGroups)
	sc.MaskedPaths = sec.MaskedPaths
	sc.ReadonlyPaths = sec.ReadonlyPaths
	sc.Seccomp = profileToCRI(sec.Seccomp)
	sc.Apparmor = profileToCRI(sec.AppArmor)
	sc.ApparmorProfile = deprecatedAppArmorName(sec.AppArmor) //nolint:staticcheck // sent beside Apparmor for older runtimes, as the kubelet does
	sc.SelinuxOptions = selinuxToCRI(sec.SELinux)
}

// groupsPolicy is CRI's supplemental groups policy: Merge (the default,
// the image's groups added) unless strict.
func groupsPolicy(strict bool) runtimeapi.SupplementalGroupsPolicy {
	if strict {
		return runtimeapi.SupplementalGroupsPolicy_Strict
	}
	return runtimeapi.SupplementalGroupsPolicy_Merge
}

func profileToCRI(p *runtime.SecurityProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return nil
	}
	out := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	switch p.Type {
	case runtime.ProfileRuntimeDefault:
		out.ProfileType = runtimeapi.SecurityProfile_RuntimeDefault
	case runtime.ProfileLocalhost:
		out.ProfileType = runtimeapi.SecurityProfile_Localhost
		out.LocalhostRef = p.LocalhostRef
	}
	return out
}

// deprecatedAppArmorName is the old string form of an AppArmor profile,
// which the kubelet still sends beside the structured one for runtimes
// that only know it.
func deprecatedAppArmorName(p *runtime.SecurityProfile) string {
	if p == nil {
		return ""
	}
	switch p.Type {
	case runtime.ProfileRuntimeDefault:
		return "runtime/default"
	case runtime.ProfileLocalhost:
		return "localhost/" + p.LocalhostRef
	}
	return "unconfined"
}

func selinuxToCRI(o *runtime.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}
