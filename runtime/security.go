package runtime

// SandboxSecurity is a pod's security context as the runtime applies it to
// the sandbox (issue 14, checklist G.15). The agent fills it from the pod
// (agent/security.go); the runtime adapter translates it.
type SandboxSecurity struct {
	// HostPID and HostIPC put the pod in the node's PID or IPC namespace.
	HostPID, HostIPC bool
	// SharePID gives the pod's containers one PID namespace, the
	// sandbox's (its pause process is PID 1); ignored with HostPID.
	SharePID bool
	// RunAsUser and RunAsGroup are the pod-level IDs (the pause process).
	RunAsUser, RunAsGroup *int64
	// SupplementalGroups are the pod's fsGroup (first, when set) and
	// supplementalGroups.
	SupplementalGroups []int64
	// StrictGroups: the processes get only SupplementalGroups, not also the
	// groups the image's /etc/group gives their user
	// (supplementalGroupsPolicy: Strict).
	StrictGroups bool
	// Sysctls are set in the pod's namespaces (names with dots).
	Sysctls map[string]string
	// Seccomp is the sandbox's own profile; nil: the runtime's choice.
	Seccomp *SecurityProfile
	// SELinux labels the sandbox; nil: the runtime's choice.
	SELinux *SELinuxOptions
	// UserNamespace, if set, gives the pod a user namespace of its own
	// (spec.hostUsers: false) mapping these IDs, the same for UIDs and
	// GIDs; its containers share it, and their mounts are idmapped to it.
	// nil: the node's user namespace.
	UserNamespace *IDMapping
}

// IDMapping maps Length IDs from ContainerID in a user namespace to HostID
// on the node.
type IDMapping struct {
	HostID, ContainerID, Length uint32
}

// ContainerSecurity is a container's effective security context beyond
// ContainerSpec's Privileged, RunAsUser and RunAsGroup: the pod's defaults
// already merged in (G.15).
type ContainerSecurity struct {
	// CapAdd and CapDrop name capabilities without the "CAP_" prefix
	// (e.g. "NET_ADMIN"), or "ALL".
	CapAdd, CapDrop []string
	// ReadOnlyRootfs mounts the container's root filesystem read-only.
	ReadOnlyRootfs bool
	// NoNewPrivs sets no_new_privs: setuid binaries and file capabilities
	// cannot raise the process's privileges.
	NoNewPrivs bool
	// SupplementalGroups are the pod's fsGroup (first, when set) and
	// supplementalGroups, added to the process's groups.
	SupplementalGroups []int64
	// StrictGroups: see SandboxSecurity.StrictGroups.
	StrictGroups bool
	// FSGroup is the pod's fsGroup, also in SupplementalGroups; the volume
	// manager gives volumes to this group.
	FSGroup *int64
	// MaskedPaths are hidden in the container and ReadonlyPaths mounted
	// read-only (the kubelet's defaults, or none for procMount Unmasked).
	// Privileged containers get neither.
	MaskedPaths, ReadonlyPaths []string
	// Seccomp and AppArmor are the container's profiles; nil: unconfined.
	Seccomp, AppArmor *SecurityProfile
	// SELinux labels the container; nil: the runtime's choice.
	SELinux *SELinuxOptions
}

// ProfileType is the kind of a seccomp or AppArmor profile.
type ProfileType int

// Profile types, as CRI names them.
const (
	ProfileUnconfined ProfileType = iota
	ProfileRuntimeDefault
	ProfileLocalhost
)

// SecurityProfile selects a seccomp or AppArmor profile.
type SecurityProfile struct {
	Type ProfileType
	// LocalhostRef is the profile for ProfileLocalhost: an absolute file
	// path for seccomp, a loaded profile's name for AppArmor.
	LocalhostRef string
}

// SELinuxOptions is an SELinux label; empty parts are the runtime's
// defaults.
type SELinuxOptions struct {
	User, Role, Type, Level string
}
