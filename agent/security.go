package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// SecurityConfig is the node's security settings, the kubelet's flags of
// the same names (issue 14, checklist G.15).
type SecurityConfig struct {
	// SeccompProfileRoot holds the Localhost seccomp profiles: a pod's
	// localhostProfile "p.json" is <SeccompProfileRoot>/p.json. The
	// kubelet's is <root-dir>/seccomp.
	SeccompProfileRoot string
	// SeccompDefault gives containers that name no seccomp profile the
	// runtime's default one instead of none (--seccomp-default).
	SeccompDefault bool
	// AllowedUnsafeSysctls are the sysctls, or prefixes ending in "*",
	// that pods may set beyond the safe set (--allowed-unsafe-sysctls).
	AllowedUnsafeSysctls []string
	// KernelVersion is the node's kernel release (uname -r): a safe
	// sysctl the kernel does not namespace yet is not safe here. "":
	// every safe sysctl is.
	KernelVersion string
	// AppArmorEnabled says the host enforces AppArmor; without it a pod
	// that asks for an AppArmor profile is rejected, as by the kubelet.
	AppArmorEnabled bool
}

// securityPolicy is SecurityConfig compiled. A nil policy is the zero
// SecurityConfig with the safe sysctls allowed. Safe for concurrent use.
type securityPolicy struct {
	cfg     SecurityConfig
	sysctls *sysctlAllowlist
}

// newSecurityPolicy checks and compiles cfg.
func newSecurityPolicy(cfg SecurityConfig) (*securityPolicy, error) {
	allow, err := newSysctlAllowlist(safeSysctls(cfg.KernelVersion), cfg.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("allowed unsafe sysctls: %w", err)
	}
	return &securityPolicy{cfg: cfg, sysctls: allow}, nil
}

func (p *securityPolicy) config() SecurityConfig {
	if p == nil {
		return SecurityConfig{}
	}
	return p.cfg
}

// sysctlFailure is the kubelet's admission of a pod's sysctls (reason
// SysctlForbidden); nil: admitted. Pure.
func (p *securityPolicy) sysctlFailure(pod *v1.Pod) *podFailure {
	allow := (*sysctlAllowlist)(nil)
	if p != nil {
		allow = p.sysctls
	}
	if allow == nil {
		allow, _ = newSysctlAllowlist(safeSysctls(""), nil)
	}
	return allow.admit(pod)
}

// appArmorFailure rejects, as the kubelet does (reason "AppArmor"), a pod
// that asks for an AppArmor profile other than Unconfined on a host
// without AppArmor; nil: admitted. Pure.
func (p *securityPolicy) appArmorFailure(pod *v1.Pod) *podFailure {
	if p.config().AppArmorEnabled || !appArmorRequired(pod) {
		return nil
	}
	return &podFailure{Reason: "AppArmor", Message: "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host"}
}

// appArmorRequired says whether any container of pod has an AppArmor
// profile other than Unconfined (fields or the beta annotations).
func appArmorRequired(pod *v1.Pod) bool {
	for _, c := range allContainers(pod) {
		if p := appArmorProfile(pod, c); p != nil && p.Type != runtime.ProfileUnconfined {
			return true
		}
	}
	return false
}

// sandboxSecurity is the pod-level security context of pod's sandbox, as
// the kubelet sets it: the sandbox itself always runs with the runtime's
// default seccomp profile. Pure.
func sandboxSecurity(pod *v1.Pod) *runtime.SandboxSecurity {
	sec := &runtime.SandboxSecurity{
		HostPID:  pod.Spec.HostPID,
		HostIPC:  pod.Spec.HostIPC,
		SharePID: pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace,
		Seccomp:  &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault},
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sec
	}
	sec.RunAsUser, sec.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
	sec.SupplementalGroups = podGroups(psc)
	sec.StrictGroups = strictGroups(psc)
	sec.SELinux = selinuxOptions(psc.SELinuxOptions)
	for _, s := range psc.Sysctls {
		if sec.Sysctls == nil {
			sec.Sysctls = map[string]string{}
		}
		sec.Sysctls[normalizeSysctl(s.Name)] = s.Value
	}
	return sec
}

// strictGroups reports supplementalGroupsPolicy Strict.
func strictGroups(psc *v1.PodSecurityContext) bool {
	return psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict
}

// podGroups are the pod's fsGroup, then its supplementalGroups: the extra
// groups of every process of the pod. fsGroup's volume ownership is the
// volume manager's part (runtime.ContainerSecurity.FSGroup).
func podGroups(psc *v1.PodSecurityContext) []int64 {
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return append(groups, psc.SupplementalGroups...)
}

// The kubelet's default masked and read-only paths (pkg/securitycontext);
// procMount Unmasked clears both. Privileged containers get none (the
// runtime drops them).
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// containerSecurity is c's effective security context (the pod's merged
// in, the container's winning) beyond Privileged and the run-as IDs that
// containerSpec sets. Pure.
func (p *securityPolicy) containerSecurity(pod *v1.Pod, c *v1.Container) *runtime.ContainerSecurity {
	sec := &runtime.ContainerSecurity{
		MaskedPaths:   defaultMaskedPaths,
		ReadonlyPaths: defaultReadonlyPaths,
		Seccomp:       p.seccompProfile(pod, c),
		AppArmor:      appArmorProfile(pod, c),
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sec.SupplementalGroups = podGroups(psc)
		sec.StrictGroups = strictGroups(psc)
		sec.FSGroup = psc.FSGroup
		sec.SELinux = selinuxOptions(psc.SELinuxOptions)
	}
	sc := c.SecurityContext
	if sc == nil {
		return sec
	}
	if sc.SELinuxOptions != nil {
		sec.SELinux = selinuxOptions(sc.SELinuxOptions)
	}
	if caps := sc.Capabilities; caps != nil {
		sec.CapAdd, sec.CapDrop = capabilityNames(caps.Add), capabilityNames(caps.Drop)
	}
	sec.ReadOnlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	// The kubelet's rule (securitycontext.AddNoNewPrivileges): only an
	// explicit allowPrivilegeEscalation: false sets no_new_privs.
	sec.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount {
		sec.MaskedPaths, sec.ReadonlyPaths = []string{}, []string{}
	}
	return sec
}

// capabilityNames are capability names as CRI wants them: without the
// "CAP_" prefix, which the runtime adds. The kubelet passes names as
// written, so there "CAP_NET_ADMIN" silently grants nothing; skiff
// applies what was meant.
func capabilityNames(caps []v1.Capability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		name := string(c)
		if len(name) > 4 && strings.EqualFold(name[:4], "CAP_") {
			name = name[4:]
		}
		out = append(out, name)
	}
	return out
}

// seccompProfile is c's seccomp profile: the container's, else the pod's,
// else RuntimeDefault with SeccompDefault, else Unconfined (the
// kubelet's getSeccompProfile). A Localhost one without a profile never
// gets here: checkSeccompLocalhost refuses the container first.
func (p *securityPolicy) seccompProfile(pod *v1.Pod, c *v1.Container) *runtime.SecurityProfile {
	sp := effectiveSeccomp(pod, c)
	cfg := p.config()
	switch {
	case sp == nil && cfg.SeccompDefault, sp != nil && sp.Type == v1.SeccompProfileTypeRuntimeDefault:
		return &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault}
	case sp != nil && sp.Type == v1.SeccompProfileTypeLocalhost && sp.LocalhostProfile != nil:
		return &runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: filepath.Join(cfg.SeccompProfileRoot, *sp.LocalhostProfile)}
	}
	return &runtime.SecurityProfile{Type: runtime.ProfileUnconfined}
}

// checkSeccompLocalhost refuses c when its effective seccomp profile is
// Localhost without a profile, or with an empty one (which API
// validation lets through): the kubelet's error since CVE-2023-2431
// (kubernetes#118690), where such a container ran unconfined. Here it
// would run unconfined (nil) or name the profile directory itself ("").
// The error is a *configError (CreateContainerConfigError).
func checkSeccompLocalhost(pod *v1.Pod, c *v1.Container) error {
	sp := effectiveSeccomp(pod, c)
	if sp != nil && sp.Type == v1.SeccompProfileTypeLocalhost && (sp.LocalhostProfile == nil || *sp.LocalhostProfile == "") {
		return &configError{errors.New("localhostProfile must be set if seccompProfile type is Localhost.")} //nolint:staticcheck // the kubelet's message, its full stop included
	}
	return nil
}

// effectiveSeccomp is c's seccomp profile field, else the pod's; nil: none.
func effectiveSeccomp(pod *v1.Pod, c *v1.Container) *v1.SeccompProfile {
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		return c.SecurityContext.SeccompProfile
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.SeccompProfile
	}
	return nil
}

// appArmorAnnotationPrefix is the beta annotation naming a container's
// AppArmor profile, still honoured by the kubelet when no field is set.
const appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// appArmorProfile is c's AppArmor profile: the container's field, else
// the pod's, else the beta annotation; nil: none asked for.
func appArmorProfile(pod *v1.Pod, c *v1.Container) *runtime.SecurityProfile {
	var ap *v1.AppArmorProfile
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		ap = c.SecurityContext.AppArmorProfile
	} else if pod.Spec.SecurityContext != nil {
		ap = pod.Spec.SecurityContext.AppArmorProfile
	}
	if ap != nil {
		switch ap.Type {
		case v1.AppArmorProfileTypeRuntimeDefault:
			return &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault}
		case v1.AppArmorProfileTypeLocalhost:
			if ap.LocalhostProfile != nil {
				return &runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: *ap.LocalhostProfile}
			}
		}
		return &runtime.SecurityProfile{Type: runtime.ProfileUnconfined}
	}
	v, ok := pod.Annotations[appArmorAnnotationPrefix+c.Name]
	switch {
	case !ok:
		return nil
	case v == "runtime/default":
		return &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault}
	case strings.HasPrefix(v, "localhost/"):
		return &runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: strings.TrimPrefix(v, "localhost/")}
	}
	return &runtime.SecurityProfile{Type: runtime.ProfileUnconfined}
}

func selinuxOptions(o *v1.SELinuxOptions) *runtime.SELinuxOptions {
	if o == nil {
		return nil
	}
	return &runtime.SELinuxOptions{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// reasonCreateContainerConfigError is the kubelet's Waiting reason for a
// container whose config cannot be generated.
const reasonCreateContainerConfigError = "CreateContainerConfigError"

// completeContainerSpec adds c's security context to spec and checks
// runAsNonRoot the kubelet's way, asking the runtime for the image's user
// only when the check needs it. Errors are *configError.
func (p *securityPolicy) completeContainerSpec(ctx context.Context, images runtime.Images, pod *v1.Pod, c *v1.Container, spec *runtime.ContainerSpec) error {
	if err := checkSeccompLocalhost(pod, c); err != nil {
		return err
	}
	spec.Security = p.containerSecurity(pod, c)
	if !runAsNonRoot(pod, c) || spec.RunAsUser != nil {
		return verifyRunAsNonRoot(pod, c, spec.RunAsUser, "")
	}
	img, err := images.ImageStatus(ctx, c.Image)
	if err != nil {
		return &configError{fmt.Errorf("image status of %s for runAsNonRoot: %w", c.Image, err)}
	}
	return verifyRunAsNonRoot(pod, c, nil, img.User)
}

// runAsNonRoot is c's effective runAsNonRoot.
func runAsNonRoot(pod *v1.Pod, c *v1.Container) bool {
	if c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil {
		return *c.SecurityContext.RunAsNonRoot
	}
	psc := pod.Spec.SecurityContext
	return psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
}

// verifyRunAsNonRoot is the kubelet's check of runAsNonRoot against the
// effective runAsUser, else the image's user (a UID, a name, or "" for
// root), with its messages. nil: c may run. Pure.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, runAsUser *int64, imageUser string) error {
	if !runAsNonRoot(pod, c) {
		return nil
	}
	desc := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if runAsUser != nil {
		if *runAsUser == 0 {
			return &configError{fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", desc, c.Name)}
		}
		return nil
	}
	user, _, _ := strings.Cut(imageUser, ":")
	uid, err := strconv.ParseInt(user, 10, 64)
	switch {
	case user == "" || (err == nil && uid == 0):
		return &configError{fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", desc, c.Name)}
	case err != nil:
		return &configError{fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, desc, c.Name)}
	}
	return nil
}
