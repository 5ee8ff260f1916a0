package probes

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Config wires a Manager. Exec is required when any container has an exec
// probe; the other fields are optional.
type Config struct {
	// Exec runs exec probes; runtime.Runtime satisfies it.
	Exec Execer
	// Clock drives the schedule (default: the real clock).
	Clock clock.WithTicker
	// Logger receives probe logs at debug level (default: slog.Default()).
	Logger *slog.Logger
	// Changes, if set, receives the pod's UID whenever a probe result
	// changes, so the pod's worker can resync. The send comes from a probe
	// goroutine with no lock held and blocks until it is received or Stop
	// is called: the receiver drains it while the Manager runs.
	Changes chan<- types.UID
	// Events records the kubelet's probe events (eventType "Warning",
	// reason ReasonUnhealthy or ReasonProbeWarning) about container
	// containerName of pod, the pod given to AddContainer. It is called from
	// probe goroutines and must be safe for concurrent use and quick.
	Events func(pod *v1.Pod, containerName, eventType, reason, message string)
	// DisableJitter turns off the random delay of a worker's first probe.
	// Like the kubelet, the Manager spreads first probes over one period
	// only while it is younger than that period, so that an agent restart
	// does not probe every container at once.
	DisableJitter bool
	// MaxConcurrentExec bounds the exec probes running at once (0: no
	// bound). A round waiting for its turn has not started: its timeout
	// runs from the exec. See limitExec.
	MaxConcurrentExec int
	// StartsIdle, if set, returns a channel that is closed once the node
	// is not starting containers (already closed if it is not now). While
	// it is open, a round of an exec probe that can only confirm the
	// status quo (liveness, or readiness of a ready container) waits for
	// it, at most one period. See worker.yieldToStarts. It must not block.
	StartsIdle func() <-chan struct{}
	// TickGrid, if positive, aligns each worker's period ticks to the
	// multiples of TickGrid on the clock (after its first round), so that
	// probes of whole-second periods fire together in one tick per second
	// instead of spread over it: at 110 pods with a 10 s exec probe, one
	// timer wake-up a second instead of 11, and the gRPC writer flushes
	// the requests together (issue 13). A round moves by less than
	// TickGrid once; 0: ticks run from each worker's first round.
	TickGrid time.Duration
	// CheckpointPath, if set, is the file where the Manager keeps the
	// readiness and startup results across agent restarts (see
	// checkpoint.go). Its directory must exist.
	CheckpointPath string
}

// entry is the state of one probe of one container.
type entry struct {
	containerID string
	result      Result
	w           *worker // nil once the probe stopped for good (terminating pod)
	// poked: Ready already asked this readiness probe to run early.
	poked bool
}

// Manager runs the probes of the containers the agent reports and keeps
// their results. All methods are safe for concurrent use. Results are kept
// per container name and belong to the container ID last passed to
// AddContainer.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	clock    clock.WithTicker
	handlers *handlers
	start    time.Time
	ctx      context.Context // the Manager's lifetime; Stop cancels it
	cancel   context.CancelFunc
	wg       sync.WaitGroup // one per worker goroutine

	mu      sync.Mutex
	stopped bool
	entries map[probeKey]*entry
	cp      *checkpoint // nil without Config.CheckpointPath

	// afterIteration, if set before the first AddContainer, is given to
	// every worker (tests).
	afterIteration func(Kind)
}

// NewManager returns a Manager. It starts no goroutine until AddContainer,
// except the checkpoint writer when Config.CheckpointPath is set.
func NewManager(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// The Manager owns its workers' lifetime: Stop ends it. Callers'
	// contexts end single calls, never the probes.
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := loadCheckpoint(cfg.CheckpointPath, cfg.Clock)
	if err != nil {
		cfg.Logger.Warn("probe results of the previous agent are lost", "err", err)
	}
	m := &Manager{
		cfg:      cfg,
		log:      cfg.Logger,
		clock:    cfg.Clock,
		handlers: newHandlers(limitExec(cfg.Exec, cfg.MaxConcurrentExec)),
		start:    cfg.Clock.Now(),
		ctx:      ctx,
		cancel:   cancel,
		entries:  map[probeKey]*entry{},
		cp:       cp,
	}
	if cp != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.runCheckpointWriter()
		}()
	}
	return m
}

// AddContainer starts probing container c of pod, whose runtime ID is
// containerID and which started at startedAt (the base of
// initialDelaySeconds). podIP is the default host of httpGet and tcpSocket
// probes and the host of grpc probes. Call it when the container has
// started, before computing its status.
//
// It is idempotent: for the same containerID it changes nothing. A new
// containerID (the container was restarted) replaces the container's
// workers and resets their results, which also ends an on-hold liveness or
// startup probe. If pod has a deletion timestamp, liveness and startup
// probes stop and report Success, as the kubelet does for a terminating
// pod. Results start as described in the package doc; AddContainer does not
// send on Changes. It never blocks on probes. After Stop it does nothing.
func (m *Manager) AddContainer(pod *v1.Pod, podIP string, c *v1.Container, containerID string, startedAt time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	t := target{podIP: podIP, container: c.DeepCopy(), containerID: containerID}
	terminating := pod.DeletionTimestamp != nil
	var fresh []*worker
	for k := Startup; k <= Liveness; k++ {
		key := probeKey{podUID: pod.UID, container: c.Name, kind: k}
		spec := specOf(t.container, k)
		e := m.entries[key]
		if e != nil && (spec == nil || e.containerID != containerID) {
			m.dropLocked(key)
			e = nil
		}
		if spec == nil {
			continue
		}
		quiet := terminating && k != Readiness
		if e == nil {
			// A container the previous agent probed starts from its
			// checkpointed result; a startup probe that succeeded is done.
			res, restored := m.restoredResultLocked(containerID, k)
			if !restored {
				res = k.initialResult()
			}
			e = &entry{containerID: containerID, result: res}
			m.entries[key] = e
			startupDone := k == Startup && res == Success
			if !quiet && !startupDone {
				e.w = m.newWorker(pod, key, spec, t, startedAt)
				e.w.verdict = res // not running yet
				fresh = append(fresh, e.w)
			}
		}
		if quiet {
			m.quietLocked(e)
		}
	}
	m.claimRestoredLocked(containerID)
	// Start goroutines only once every probe of the container is
	// registered, so a liveness worker always sees its startup probe.
	for _, w := range fresh {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			w.run()
		}()
	}
}

// newWorker builds (does not start) the worker of one probe.
func (m *Manager) newWorker(pod *v1.Pod, key probeKey, spec *v1.Probe, t target, startedAt time.Time) *worker {
	log := m.log.With("pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID,
		"container", key.container, "containerID", t.containerID, "probe", key.kind)
	return newWorker(m.ctx, workerParams{
		pod:            pod,
		key:            key,
		spec:           spec,
		target:         t,
		startedAt:      startedAt,
		jitter:         m.jitter(timingOf(spec).period),
		tickGrid:       m.cfg.TickGrid,
		clock:          m.clock,
		handlers:       m.handlers,
		owner:          m,
		log:            log,
		startsIdle:     m.cfg.StartsIdle,
		afterIteration: m.afterIteration,
	})
}

// jitter returns the delay of a new worker's first probe: a random part of
// period while the Manager is younger than period, else 0.
func (m *Manager) jitter(period time.Duration) time.Duration {
	if m.cfg.DisableJitter || m.clock.Since(m.start) >= period {
		return 0
	}
	return rand.N(period)
}

// quietLocked ends a liveness or startup probe of a terminating pod with
// Success ("quiet shutdown": a dying pod's containers are not restarted).
func (m *Manager) quietLocked(e *entry) {
	if e.w != nil {
		e.w.stop()
		e.w = nil
	}
	e.result = Success
}

// dropLocked stops the probe under key and forgets its result.
func (m *Manager) dropLocked(key probeKey) {
	e := m.entries[key]
	if e == nil {
		return
	}
	if e.w != nil {
		e.w.stop()
	}
	delete(m.entries, key)
	if e.result == Success && key.kind != Liveness { // it was in the checkpoint
		m.checkpointChangedLocked()
	}
}

// RemoveContainer stops the probes of one container and forgets their
// results. Call it when the container has exited for good or was removed.
// Idempotent; it does not wait for the workers' goroutines, which return
// promptly (in-flight probes are cancelled).
func (m *Manager) RemoveContainer(podUID types.UID, containerName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := Startup; k <= Liveness; k++ {
		m.dropLocked(probeKey{podUID: podUID, container: containerName, kind: k})
	}
}

// RemovePod stops the probes of every container of the pod and forgets
// their results, as RemoveContainer. Idempotent and non-blocking.
func (m *Manager) RemovePod(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.entries {
		if key.podUID == podUID {
			m.dropLocked(key)
		}
	}
	m.forgetRestoredPodLocked(podUID)
}

// Stop stops every probe and waits until all worker goroutines have
// returned. Later AddContainer calls do nothing. It first writes a pending
// checkpoint. Idempotent.
func (m *Manager) Stop() {
	m.writeCheckpoint(true)
	m.mu.Lock()
	m.stopped = true
	for key := range m.entries {
		m.dropLocked(key)
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}
