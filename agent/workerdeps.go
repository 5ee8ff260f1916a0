package agent

import (
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
)

// workerDeps are a pod worker's dependencies, shared by all workers of an
// agent; all of them are safe for concurrent use. The worker reaches the
// agent only through owner.
type workerDeps struct {
	rt     runtime.Runtime
	clock  clock.WithTicker
	log    *slog.Logger
	prober Prober
	// starts gates sandbox and container starts, teardowns sandbox
	// teardowns (see killAll).
	starts, teardowns *startgate.Gate
	events            EventRecorder
	hooks             *hookRunner
	// cgroups: nil, no pod cgroups.
	cgroups PodCgroups
	// env: what the node tells its pods (IPs, DNS, objects, services).
	env        podEnv
	podsDir    string
	podLogsDir string
	// resync is the safety resync period (Config.ResyncPeriod).
	resync time.Duration
	// relisted counts the relist's successful listings (relistLoop.listings);
	// nil: no relist runs, and every resync is full (see canSkipResync).
	relisted *atomic.Uint64
	// runtimeName names the runtime in container IDs ("containerd"); set
	// by Agent.Run before any worker starts.
	runtimeName string
	owner       workerOwner
	// status: where the worker publishes the pod's status.
	status statusPublisher
	// volumes: nil, no volume manager (see Config.Volumes).
	volumes VolumeManager
	// objectsChanged counts object changes (volumeLoops.objectsChanged).
	objectsChanged *atomic.Uint64
	// security is the node's security settings (nil: the defaults).
	security *securityPolicy
	// puller pulls images (Config.Puller); required once a pod needs a
	// pull. credentials: Config.Credentials (nil: anonymous pulls).
	puller      ImagePuller
	credentials PullCredentials
	// metricsPort: Config.Metrics; read through metrics() (nil: none).
	metricsPort Metrics
	// userns: Config.UserNamespaces (nil: none).
	userns UserNamespaces
	// rro: the runtime has recursive read-only mounts
	// (Config.RuntimeFeatures).
	rro bool
	// limits: Config's CPUCFSQuotaPeriod, OOMGroupKill and
	// MemoryThrottlingFactor, with the node's allocatable memory.
	limits containerLimits
	// restartMax: Config.MaxContainerRestartPeriod.
	restartMax time.Duration
}

// workerOwner is what a pod worker tells its owner (the Agent). Safe for
// concurrent use; returns quickly.
type workerOwner interface {
	// workerDone forgets w: its pod is gone from the runtime.
	workerDone(w *podWorker)
}
