// Package runtime is skiff's port to a container runtime: the small set of
// operations the agent needs, in skiff's own words. The CRI implementation
// lives in runtime/cri; it is the only package that imports k8s.io/cri-api.
// A hand-written fake for tests lives in runtime/fake.
//
// All methods are safe for concurrent use. Methods that remove or stop things
// are idempotent: stopping a stopped container or removing a missing one is
// not an error. Lookups of a missing object return an error wrapping
// ErrNotFound.
package runtime

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is wrapped by errors for sandboxes, containers and images the
// runtime does not know.
var ErrNotFound = errors.New("not found")

// Runtime is everything the agent asks of a container runtime.
type Runtime interface {
	Sandboxes
	Containers
	Images
	// Version names the runtime and its version.
	Version(ctx context.Context) (VersionInfo, error)
	// Features says which optional pod features the runtime's default
	// handler supports.
	Features(ctx context.Context) (Features, error)
}

// Features are the optional pod features a runtime supports, as it
// reports them (CRI Status) or as its version implies.
type Features struct {
	// UserNamespaces: pods with a user namespace of their own
	// (SandboxSecurity.UserNamespace).
	UserNamespaces bool
	// RecursiveReadOnlyMounts: read-only mounts whose submounts are
	// read-only too.
	RecursiveReadOnlyMounts bool
	// SupplementalGroupsPolicy: the Strict policy (only the pod's groups).
	SupplementalGroupsPolicy bool
	// ImageVolumes: OCI images mounted as volumes.
	ImageVolumes bool
	// Handlers are the runtime handlers the runtime reports, in its
	// order, with their own features ("" is the default handler): what
	// the node status lists as runtimeHandlers. None from a runtime whose
	// CRI Status lists none (containerd 1.x).
	Handlers []Handler
	// Reported: the runtime's CRI Status carried runtime-wide features
	// (containerd 2); the node status lists its features only then.
	Reported bool
}

// Handler is one runtime handler and what it supports.
type Handler struct {
	Name                                    string
	UserNamespaces, RecursiveReadOnlyMounts bool
}

// Sandboxes manages pod sandboxes (the pause container and its namespaces).
type Sandboxes interface {
	// RunSandbox creates and starts a sandbox, with networking set up by the
	// runtime (CNI). It returns the sandbox ID. Blocks until ready.
	RunSandbox(ctx context.Context, spec *SandboxSpec) (string, error)
	// StopSandbox stops all containers of the sandbox and tears down its
	// network. Idempotent.
	StopSandbox(ctx context.Context, id string) error
	// RemoveSandbox removes a sandbox and its containers. Idempotent.
	RemoveSandbox(ctx context.Context, id string) error
	// SandboxStatus returns the current state of one sandbox.
	SandboxStatus(ctx context.Context, id string) (*SandboxStatus, error)
	// ListSandboxes lists sandboxes whose labels include all of labels
	// (nil: all sandboxes).
	ListSandboxes(ctx context.Context, labels map[string]string) ([]*Sandbox, error)
}

// Containers manages containers inside sandboxes.
type Containers interface {
	// CreateContainer creates (does not start) a container in the sandbox.
	// sandbox is the spec the sandbox was created with (CRI needs it again).
	CreateContainer(ctx context.Context, sandboxID string, spec *ContainerSpec, sandbox *SandboxSpec) (string, error)
	// StartContainer starts a created container.
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends the container's stop signal (the image's
	// STOPSIGNAL, else SIGTERM), then SIGKILL after timeout. Blocks until the
	// container has exited. Idempotent.
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	// RemoveContainer removes a container (stopping it first if needed). Idempotent.
	RemoveContainer(ctx context.Context, id string) error
	// ListContainers lists containers matching filter.
	ListContainers(ctx context.Context, filter ContainerFilter) ([]*Container, error)
	// ContainerStatus returns the detailed state of one container. Its
	// SandboxID may be empty (CRI's status does not carry it; a listing
	// does): a caller that needs it takes it from ListContainers.
	ContainerStatus(ctx context.Context, id string) (*ContainerStatus, error)
	// ExecSync runs cmd in the container and waits for it, at most timeout
	// (0: no limit). A non-zero exit code is not an error.
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*ExecResult, error)
	// ReopenContainerLog makes the runtime close the container's log file
	// and open a new one at the same path (log rotation: the caller renamed
	// the old file first). Fails for a container that is not running.
	ReopenContainerLog(ctx context.Context, id string) error
	// UpdateContainerResources changes a running container's cpu and
	// memory limits in place (in-place pod resize). Setting a memory limit
	// below the container's usage fails.
	UpdateContainerResources(ctx context.Context, id string, res *Resources) error
}

// Images manages images known to the runtime.
type Images interface {
	// ImageStatus returns the image for ref, or an error wrapping ErrNotFound.
	ImageStatus(ctx context.Context, ref string) (*Image, error)
	// PullImage pulls ref from its registry with auth (nil: anonymous, or
	// whatever the runtime's own configuration supplies) and returns the
	// image ID. Blocking; only ctx bounds it.
	PullImage(ctx context.Context, ref string, auth *AuthConfig) (string, error)
	// ListImages lists all images.
	ListImages(ctx context.Context) ([]*Image, error)
	// RemoveImage removes an image. Idempotent.
	RemoveImage(ctx context.Context, ref string) error
	// ImageFsInfo reports the use of the filesystems that hold images.
	ImageFsInfo(ctx context.Context) ([]FilesystemUsage, error)
}

// AuthConfig is a credential for one registry, as CRI's AuthConfig and a
// docker config.json entry carry it: Username and Password, or Auth
// (base64 of "user:password"), or a token.
type AuthConfig struct {
	Username, Password string
	Auth               string
	ServerAddress      string
	IdentityToken      string
	RegistryToken      string
}

// FilesystemUsage is one filesystem's use by the runtime's images
// (CRI FilesystemUsage). Capacity is not reported: statfs the Mountpoint.
type FilesystemUsage struct {
	// Mountpoint is a directory on the filesystem (e.g. containerd's
	// snapshotter root).
	Mountpoint string
	// UsedBytes and InodesUsed are what the images take on it.
	UsedBytes, InodesUsed uint64
}

// SandboxState is the state of a pod sandbox.
type SandboxState int

// Sandbox states, as CRI reports them.
const (
	SandboxNotReady SandboxState = iota
	SandboxReady
)

func (s SandboxState) String() string {
	if s == SandboxReady {
		return "Ready"
	}
	return "NotReady"
}

// ContainerState is the state of a container, as CRI reports it.
type ContainerState int

// Container states.
const (
	ContainerUnknown ContainerState = iota
	ContainerCreated
	ContainerRunning
	ContainerExited
)

func (s ContainerState) String() string {
	switch s {
	case ContainerCreated:
		return "Created"
	case ContainerRunning:
		return "Running"
	case ContainerExited:
		return "Exited"
	default:
		return "Unknown"
	}
}

// SandboxSpec describes a sandbox to create.
type SandboxSpec struct {
	// Name, Namespace, UID identify the pod; Attempt counts sandbox
	// re-creations for the same pod UID.
	Name, Namespace, UID string
	Attempt              uint32
	// Hostname of the pod (ignored with HostNetwork).
	Hostname string
	// LogDirectory is the absolute directory for the pod's container logs
	// (/var/log/pods/<ns>_<name>_<uid>).
	LogDirectory string
	// HostNetwork puts the sandbox in the node's network namespace.
	HostNetwork bool
	// DNS is the pod's resolv.conf content; nil leaves the runtime default.
	DNS          *DNSConfig
	PortMappings []PortMapping
	Labels       map[string]string
	Annotations  map[string]string
	// CgroupParent is the pod-level cgroup ("" lets the runtime choose).
	CgroupParent string
	// RuntimeHandler selects a runtime class handler ("" = default).
	RuntimeHandler string
	// Privileged allows privileged containers in this sandbox.
	Privileged bool
	// Security is the pod-level security context; nil: the defaults (own
	// PID namespace per container, the pod's IPC namespace).
	Security *SandboxSecurity
}

// DNSConfig is the content of a pod's resolv.conf.
type DNSConfig struct {
	Servers, Searches, Options []string
}

// PortMapping maps a host port to a container port.
type PortMapping struct {
	Protocol      string // TCP, UDP, SCTP
	ContainerPort int32
	HostPort      int32
	HostIP        string
}

// Sandbox is a sandbox as listed by the runtime.
type Sandbox struct {
	ID                   string
	Name, Namespace, UID string
	Attempt              uint32
	State                SandboxState
	CreatedAt            time.Time
	Labels               map[string]string
	Annotations          map[string]string
}

// SandboxStatus adds network details to Sandbox.
type SandboxStatus struct {
	Sandbox
	// IP is the pod's primary IP ("" for host-network sandboxes on
	// runtimes that do not report it); AdditionalIPs holds the others.
	IP            string
	AdditionalIPs []string
	HostNetwork   bool
}

// KeyValue is an environment variable.
type KeyValue struct{ Key, Value string }

// Mount is a bind mount into a container, or an image mounted as a
// volume.
type Mount struct {
	HostPath, ContainerPath string
	ReadOnly                bool
	// Propagation is the mount's propagation (zero: private).
	Propagation MountPropagation
	// RecursiveReadOnly makes the mounts under a read-only mount read-only
	// too (the runtime must support it).
	RecursiveReadOnly bool
	// Image, instead of HostPath, mounts this image (its ID; the image
	// must be present) read-only; ImageSubPath mounts only that directory
	// of it.
	Image, ImageSubPath string
}

// MountPropagation is a mount's propagation mode (a volumeMount's
// mountPropagation: None, HostToContainer, Bidirectional).
type MountPropagation int

// Mount propagation modes, as CRI has them.
const (
	PropagationPrivate         MountPropagation = iota // None: rprivate
	PropagationHostToContainer                         // rslave
	PropagationBidirectional                           // rshared
)

// Resources are the Linux resources of a container, already converted from
// Kubernetes quantities. Zero means "not set".
type Resources struct {
	CPUShares   int64
	CPUQuota    int64
	CPUPeriod   int64
	MemoryLimit int64
	// Unified holds cgroup v2 files to set (e.g. "memory.high").
	Unified map[string]string
}

// ContainerSpec describes a container to create.
type ContainerSpec struct {
	Name    string
	Attempt uint32
	// Image is the image reference or ID to run.
	Image      string
	Command    []string
	Args       []string
	WorkingDir string
	Env        []KeyValue
	Mounts     []Mount
	// LogPath is relative to the sandbox's LogDirectory, e.g. "app/0.log".
	LogPath     string
	Labels      map[string]string
	Annotations map[string]string
	// Stdin keeps the container's stdin open for attach; StdinOnce closes
	// it after the first attach session ends (its output then still
	// flows until the container exits); TTY allocates a terminal.
	Stdin, StdinOnce, TTY bool
	// TargetContainerID, when set, puts the container in that container's
	// PID namespace (an ephemeral container's targetContainerName).
	TargetContainerID string
	Privileged        bool
	RunAsUser         *int64
	RunAsGroup        *int64
	Resources         *Resources
	// Security is the rest of the container's security context; nil: the
	// runtime's defaults.
	Security *ContainerSecurity
}

// ContainerFilter selects containers; zero fields match everything.
type ContainerFilter struct {
	SandboxID string
	State     *ContainerState
	Labels    map[string]string
}

// Container is a container as listed by the runtime.
type Container struct {
	ID, SandboxID string
	Name          string
	Attempt       uint32
	// Image is the image as requested; ImageRef the resolved image ID.
	Image, ImageRef string
	State           ContainerState
	CreatedAt       time.Time
	Labels          map[string]string
	Annotations     map[string]string
}

// AnnotationImageVolumes is the container annotation that lists, comma
// separated, the IDs of the images the container mounts as volumes: the
// image GC keeps them as it keeps the container's own image.
const AnnotationImageVolumes = "io.skiff.image-volumes"

// ContainerStatus adds execution details to Container.
type ContainerStatus struct {
	Container
	StartedAt, FinishedAt time.Time
	ExitCode              int32
	// Reason and Message as reported by the runtime (e.g. "OOMKilled",
	// "Completed", "Error").
	Reason, Message string
	// LogPath is the absolute path of the container's log file.
	LogPath string
	// User is the identity the container's first process runs as, as the
	// runtime reports it (containerd 2); nil where it does not.
	User *ContainerUser
}

// ContainerUser is a Linux process identity: uid, primary gid and the
// supplementary groups.
type ContainerUser struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// ExecResult is the outcome of ExecSync.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// Image is an image known to the runtime.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        uint64
	// User is the image's configured user, if any.
	User string
	// Pinned images are never garbage collected (the runtime says so, e.g.
	// containerd's sandbox image).
	Pinned bool
}

// ImageImporter loads image archives (OCI layout tars or docker-save tars)
// into the runtime's image store, where CRI sees them. Safe for concurrent
// use; importing the same archive twice is harmless.
type ImageImporter interface {
	// ImportArchive imports every image of the archive at path and returns
	// the image names it registered.
	ImportArchive(ctx context.Context, path string) ([]string, error)
}

// ExitWatcher reports container exits as they happen, so that the agent
// need not wait for its next relist to see one. Optional: a runtime without
// one is only relisted. The IDs may name containers or sandboxes (whose
// pause process exited), and the runtime's listing may lag the report by a
// moment.
type ExitWatcher interface {
	// WatchExits calls fn with the ID of each container or sandbox whose
	// process exited, until ctx is done. After a gap in the reports (the
	// runtime restarted) it calls fn("") once: exits may have been
	// missed, list now. Blocking; fn must not block.
	WatchExits(ctx context.Context, fn func(id string)) error
}

// VersionInfo is what the runtime says it is.
type VersionInfo struct {
	// Name is the runtime's name, e.g. "containerd" or "cri-o": the scheme
	// of container IDs in pod status (<name>://<id>).
	Name string
	// Version is the runtime's version, APIVersion the CRI version ("v1").
	Version, APIVersion string
}

// String returns e.g. "containerd 1.6.20 (CRI v1)".
func (v VersionInfo) String() string {
	return v.Name + " " + v.Version + " (CRI " + v.APIVersion + ")"
}

// AnnotationShimGroup is the OCI annotation containerd-shim-runc-v2 groups
// containers by: the containers whose specs carry the same value share one
// shim process (without it, a pod's containers share their sandbox's). A
// containerd whose runc runtime lists it in pod_annotations passes it from
// the sandbox config to the sandbox's and its containers' specs.
const AnnotationShimGroup = "io.containerd.runc.v2.group"
