package agent

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/nodefeatures"
	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
)

// Source delivers the complete set of desired pods of one origin (the
// manifest directory, an HTTP URL ...). Run blocks until ctx is done and
// calls sink, never concurrently, with the full set every time it changes,
// and once after its initial listing.
type Source interface {
	Run(ctx context.Context, sink func([]*v1.Pod)) error
}

// Config wires an Agent. Runtime and NodeName are required.
type Config struct {
	NodeName   string
	Runtime    runtime.Runtime
	PodLogsDir string
	// HostIPs are the node's IPs, for status.hostIP(s).
	HostIPs []string
	// DNS computes a pod's resolv.conf; nil leaves the runtime default.
	// A warning is the message of the warning event MissingClusterDNS
	// (the pod fell back to the node's resolv.conf), which the agent
	// records on the node, and on the pod prefixed with
	// `pod: "<name>_<namespace>(<uid>)". `, when it creates the pod's
	// sandbox (the kubelet's events).
	DNS    func(*v1.Pod) (dns *runtime.DNSConfig, warning string, err error)
	Clock  clock.WithTicker
	Logger *slog.Logger
	// RelistPeriod is how often the runtime is listed (default 1s).
	RelistPeriod time.Duration
	// Exits reports container exits as they happen, so the runtime is
	// listed at once; nil: exits are seen at the next relist.
	Exits runtime.ExitWatcher
	// ResyncPeriod is each worker's safety resync (default 1m, the
	// kubelet's --sync-frequency). A worker also syncs at once when its
	// pod changes, its runtime state changes (relist, exit events), a
	// probe result changes, or a back-off or retry is due, so the resync
	// only catches what nothing reported. Each sync costs four CRI calls:
	// at 10s, 110 pods made 44 calls/s at steady state (issue 5). A resync
	// is skipped while the relist sees the pod unchanged, but at least
	// every 5th is full (see canSkipResync).
	ResyncPeriod time.Duration
	// PodsDir holds per-pod files (termination message files), e.g.
	// <root-dir>/pods; "" disables termination message files.
	PodsDir string
	// Prober runs liveness, readiness and startup probes; nil: no probes
	// run, and every running container counts as started and ready. Its
	// owner stops it, after Run returned.
	Prober Prober
	// ProbeChanges delivers the UID of a pod whose probe result changed
	// (the prober's output, e.g. probes.Config.Changes): Run drains it and
	// wakes the pod's worker. nil: workers see results at their next sync.
	ProbeChanges <-chan types.UID
	// Starts bounds concurrent sandbox and container starts (shared with
	// the prober, which yields to starts); nil: a gate of MaxParallelStarts.
	Starts *startgate.Gate
	// Events keeps the events of the node's pods (shared with the prober);
	// nil: a recorder of its own.
	Events EventRecorder
	// MaxParallelStarts bounds concurrent sandbox teardowns, and starts
	// where Starts is nil: see startgate.New (0: adaptive up to 4*CPUs
	// within [16, 64]; N > 0: adaptive up to N), each gate with its own
	// controller.
	MaxParallelStarts int
	// Cgroups manages pod-level cgroups; nil: no pod cgroups (the runtime
	// chooses where containers go).
	Cgroups PodCgroups
	// Services gives API pods (and static pods, once read) their service
	// environment variables (G.4); nil: none, as without an API server.
	Services ServiceEnv
	// NodeUsage reads the whole machine's cpu and memory use for the
	// summary's node stats (nodestatus.ReadUsage); nil: none reported.
	NodeUsage func() (*cgroups.Usage, error)
	// Allocatable is what pods may request in total (cpu, memory, pods);
	// nil: every pod is admitted.
	Allocatable v1.ResourceList
	// Objects are the ConfigMaps and Secrets pods may reference (volumes,
	// env); nil: none exist, and a pod referencing one fails as in the
	// kubelet when the object is missing.
	Objects objects.Getter
	// Volumes sets up and tears down pod volumes; nil: a pod with volumes
	// fails to start (FailedMount), pods without run as before.
	Volumes VolumeManager
	// ObjectChanges fires when the ConfigMaps and Secrets changed (e.g.
	// objects.Store.Subscribe): Run refreshes the volumes and wakes the
	// workers. nil: volumes keep the content they were set up with, and
	// a pod waiting for an object retries at its next back-off.
	ObjectChanges <-chan struct{}
	// Security is the node's security settings: seccomp profiles, unsafe
	// sysctls, AppArmor (zero: the kubelet's defaults).
	Security SecurityConfig
	// ClusterDomain is the DNS domain of the cluster, for the FQDN of pods
	// with spec.subdomain (default DefaultClusterDomain).
	ClusterDomain string
	// Credentials finds pull credentials for a pod's images; nil: pulls
	// are anonymous (the runtime's own configuration still applies).
	Credentials PullCredentials
	// Puller pulls the images pods need (e.g. an *images.Puller shared
	// with the API's image pulls); nil: a serialized puller of the
	// agent's own on Runtime, as the kubelet's default. Its owner waits
	// for it after Run returned.
	Puller ImagePuller
	// ContainerGC is the container GC's policy (see containergc.go); nil:
	// no container GC runs.
	ContainerGC *ContainerGCPolicy
	// ContainerGCPeriod is the container GC's period (default
	// DefaultContainerGCPeriod, the kubelet's 1 min).
	ContainerGCPeriod time.Duration
	// PodChanged, when set, is told the UID of every pod whose published
	// state (see Pod) was replaced, and of every pod the agent forgot
	// (terminated and gone from the runtime). It is called with the
	// agent's status lock held: it must return at once and never call into
	// the Agent (e.g. record the UID and signal a goroutine of its own).
	PodChanged func(types.UID)
	// Metrics receives the agent's measurements (e.g. a *metrics.Kubelet);
	// nil: none are taken. See also Agent.RuntimeCounts.
	Metrics Metrics
	// Admitters run after the agent's own admission checks, in order
	// (e.g. the node shutdown manager's, which refuses pods while the
	// node shuts down); nil: none.
	Admitters []PodAdmitter
	// RuntimeFeatures are what the runtime supports (runtime.Features):
	// recursiveReadOnly IfPossible follows RecursiveReadOnlyMounts.
	RuntimeFeatures runtime.Features
	// UserNamespaces gives pods with spec.hostUsers: false their user
	// namespaces (a *userns.Manager); nil: such pods fail to start.
	UserNamespaces UserNamespaces
	// CPUCFSQuotaPeriod is the CFS period of the containers' cpu limits
	// (the kubelet's cpuCFSQuotaPeriod; 0: 100ms).
	CPUCFSQuotaPeriod time.Duration
	// MaxContainerRestartPeriod caps the restart back-off (0: 300s).
	MaxContainerRestartPeriod time.Duration
	// DeclaredFeatures are the node's declared features (the node status
	// publishes the same): a pod that needs another is rejected
	// (PodFeatureUnsupported), an update that needs another gets a
	// FailedNodeDeclaredFeaturesCheck event. nil: nodefeatures.Implemented()
	// at k8sversion.KubeletVersion.
	DeclaredFeatures *nodefeatures.Set
	// MemoryThrottlingFactor (the kubelet's memoryThrottlingFactor, MemoryQoS;
	// 0: none) gives a container whose memory request is below its limit
	// memory.high between the two (or, without a limit, below
	// AllocatableAbsoluteMemory). Only for cgroup v2.
	MemoryThrottlingFactor float64
	// AllocatableAbsoluteMemory is the node's memory less the system and
	// kube reservations, without the eviction threshold (the kubelet's
	// GetNodeAllocatableAbsolute): memory.high's base for a container
	// without a memory limit (0: Allocatable's memory).
	AllocatableAbsoluteMemory int64
	// OOMGroupKill: every container gets memory.oom.group=1, so that an
	// OOM kill takes the whole container, as the kubelet on cgroup v2 with
	// singleProcessOOMKill false (its default there). Only for cgroup v2.
	OOMGroupKill bool
}

// UserNamespaces is the agent's port to the allocator of pods' user
// namespaces. Both methods are safe for concurrent use.
type UserNamespaces interface {
	// Mapping returns the pod's ID mapping, the same on every call until
	// Release.
	Mapping(podUID string) (runtime.IDMapping, error)
	// Pods lists the pods holding IDs (allocated, or loaded at start from
	// their mapping files).
	Pods() []string
	// Release frees the pod's IDs once it is gone.
	Release(podUID string) error
}

// setDefaults fills in the defaults of the fields left zero (see each
// field), except Puller: New makes the agent's own.
func (cfg *Config) setDefaults() {
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = podlogs.DefaultRoot
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RelistPeriod <= 0 {
		cfg.RelistPeriod = time.Second
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = time.Minute
	}
	if cfg.ContainerGCPeriod <= 0 {
		cfg.ContainerGCPeriod = DefaultContainerGCPeriod
	}
	if cfg.Starts == nil {
		cfg.Starts = startgate.New(cfg.MaxParallelStarts)
	}
	if cfg.Events == nil {
		cfg.Events = events.NewRecorder(cfg.Clock, cfg.NodeName)
	}
	if cfg.Prober == nil {
		cfg.Prober = noProber{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
}
