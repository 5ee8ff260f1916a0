package podspec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// sysctlNameFmt is the API server's sysctl name format: segments of
// [a-z0-9-_], separated by dots or slashes.
const (
	sysctlSegmentFmt = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlNameFmt    = "(" + sysctlSegmentFmt + "[\\./])*" + sysctlSegmentFmt
	sysctlMaxLength  = 253
)

var sysctlNameRegexp = regexp.MustCompile("^" + sysctlNameFmt + "$")

// linuxCapabilities are the capability names a container may add or drop
// (without "CAP_"), as of Linux 5.9 (CAP_CHECKPOINT_RESTORE).
const linuxCapabilities = `CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID
	SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
	SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE
	SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN
	SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE`

func isLinuxCapability(name string) bool {
	return slices.Contains(strings.Fields(linuxCapabilities), name)
}

// validatePodSecurity checks the pod-level security fields as the API
// server does (validatePodSpecSecurityContext, validateHostUsers).
func validatePodSecurity(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ownUserNamespace(spec) {
		// The API server's validateHostUsers (hostNetwork needs an alpha
		// feature upstream).
		const msg = "when `hostUsers` is false"
		if spec.HostNetwork {
			errs = append(errs, field.Forbidden(path.Child("hostNetwork"), msg))
		}
		if spec.HostPID {
			errs = append(errs, field.Forbidden(path.Child("HostPID"), msg))
		}
		if spec.HostIPC {
			errs = append(errs, field.Forbidden(path.Child("HostIPC"), msg))
		}
	}
	if spec.HostPID && spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace {
		errs = append(errs, field.Invalid(path.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	sc := spec.SecurityContext
	if sc == nil {
		return errs
	}
	scPath := path.Child("securityContext")
	if sc.FSGroup != nil {
		errs = append(errs, invalidIf(validation.IsValidGroupID(*sc.FSGroup), scPath.Child("fsGroup"), *sc.FSGroup)...)
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != v1.FSGroupChangeAlways && *p != v1.FSGroupChangeOnRootMismatch {
		// The API server's validateFSGroupChangePolicy (an empty value too).
		errs = append(errs, field.NotSupported(scPath.Child("fsGroupChangePolicy"), *p,
			[]v1.PodFSGroupChangePolicy{v1.FSGroupChangeAlways, v1.FSGroupChangeOnRootMismatch}))
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, invalidIf(validation.IsValidGroupID(g), scPath.Child("supplementalGroups").Index(i), g)...)
	}
	if p := sc.SupplementalGroupsPolicy; p != nil {
		pp := scPath.Child("supplementalGroupsPolicy")
		errs = append(errs, validateEnum(*p, pp, v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict)...)
	}
	errs = append(errs, validateSysctls(sc.Sysctls, spec.HostNetwork, spec.HostIPC, scPath.Child("sysctls"))...)
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, scPath.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, scPath.Child("appArmorProfile"))...)
	return errs
}

// validateSysctls checks names (format, duplicates) and that no net.*
// sysctl goes with hostNetwork, no IPC one with hostIPC. Whether the node
// allows a sysctl is the agent's admission (reason SysctlForbidden).
func validateSysctls(sysctls []v1.Sysctl, hostNetwork, hostIPC bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, s := range sysctls {
		np := path.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(np, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameFmt)))
		case names[s.Name]:
			errs = append(errs, field.Duplicate(np, s.Name))
		}
		names[s.Name] = true
		ns, _, _ := utilsysctl.GetNamespace(s.Name)
		switch {
		case hostNetwork && ns == utilsysctl.NetNamespace:
			errs = append(errs, field.Invalid(np, s.Name, "may not be specified when 'hostNetwork' is true"))
		case hostIPC && ns == utilsysctl.IPCNamespace:
			errs = append(errs, field.Invalid(np, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return errs
}

// ownUserNamespace reports whether the pod asks for a user namespace of
// its own (spec.hostUsers: false).
func ownUserNamespace(spec *v1.PodSpec) bool {
	return spec.HostUsers != nil && !*spec.HostUsers
}

// validateContainerSecurity checks a container's security context as the
// API server does (ValidateSecurityContext): procMount Unmasked needs the
// pod's own user namespace (userns).
func validateContainerSecurity(sc *v1.SecurityContext, path *field.Path, userns bool) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, path)
	if sc.ProcMount != nil {
		pp := path.Child("procMount")
		errs = append(errs, validateEnum(*sc.ProcMount, pp, v1.DefaultProcMount, v1.UnmaskedProcMount)...)
		if *sc.ProcMount == v1.UnmaskedProcMount && !userns {
			errs = append(errs, field.Invalid(pp, *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
	if caps := sc.Capabilities; caps != nil {
		errs = append(errs, validateCapabilities(caps.Add, path.Child("capabilities", "add"))...)
		errs = append(errs, validateCapabilities(caps.Drop, path.Child("capabilities", "drop"))...)
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(path, field.OmitValueType{}, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return errs
}

// validateCapabilities accepts Linux capability names, with or without
// "CAP_", in any case, and ALL. (The API server takes any string; the
// runtime then fails or silently ignores an unknown one.)
func validateCapabilities(caps []v1.Capability, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range caps {
		name := strings.ToUpper(string(c))
		if name == "ALL" || isLinuxCapability(strings.TrimPrefix(name, "CAP_")) {
			continue
		}
		errs = append(errs, field.Invalid(path.Index(i), c, "must be a Linux capability such as NET_ADMIN (the CAP_ prefix is optional) or ALL"))
	}
	return errs
}

// validateSeccompProfile is the API server's validateSeccompProfileField.
func validateSeccompProfile(sp *v1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type,
			[]v1.SeccompProfileType{v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined}))
	}
	lp := p.Child("localhostProfile")
	switch {
	case sp.Type == v1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(lp, "must be set when seccomp type is Localhost"))
	case sp.Type == v1.SeccompProfileTypeLocalhost:
		errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, lp)...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(lp, *sp.LocalhostProfile, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// validateAppArmorProfile is the API server's ValidateAppArmorProfileField.
func validateAppArmorProfile(ap *v1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	var errs field.ErrorList
	switch ap.Type {
	case v1.AppArmorProfileTypeLocalhost, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), ap.Type,
			[]v1.AppArmorProfileType{v1.AppArmorProfileTypeLocalhost, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined}))
	}
	lp := p.Child("localhostProfile")
	if ap.Type != v1.AppArmorProfileTypeLocalhost {
		if ap.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(lp, *ap.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
		return errs
	}
	switch {
	case ap.LocalhostProfile == nil || *ap.LocalhostProfile == "":
		errs = append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
	case strings.TrimSpace(*ap.LocalhostProfile) != *ap.LocalhostProfile:
		errs = append(errs, field.Invalid(lp, *ap.LocalhostProfile, "must not be padded with whitespace"))
	case len(*ap.LocalhostProfile) > 4095:
		errs = append(errs, field.TooLong(lp, "", 4095))
	}
	return errs
}
