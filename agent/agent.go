// Package agent runs pods: it merges the desired pods of its sources, keeps
// one worker goroutine per pod UID, and publishes pod status.
//
// Data flow: sources -> Agent.setSource -> reconcile (start/kill workers)
// -> podWorker loop: observe runtime state -> computePodActions (pure) ->
// apply -> computePodStatus (pure) -> publish. A relister lists the runtime
// once a period and wakes workers whose containers changed, and kills
// sandboxes that no source wants (orphans, e.g. a manifest deleted while
// skiff was down).
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/events"
	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/objects"
	"github.com/skiffnode/skiff/podlogs"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/startgate"
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
	DNS    func(*v1.Pod) (*runtime.DNSConfig, error)
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
}

// Agent runs pods. Create with New, then Run. Pods is safe for concurrent
// use at any time.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.WithTicker
	starts *startgate.Gate
	// teardowns bounds concurrent sandbox teardowns (see killAll).
	teardowns *startgate.Gate
	updated   chan struct{}
	events    EventRecorder
	hooks     *hookRunner
	prober    Prober
	// status keeps the pods as published (see Pod).
	status *statusManager
	// volumes runs the volume loops.
	volumes *volumeLoops
	// gc is the container GC; nil without Config.ContainerGC.
	gc *containerGC
	// deps are what the pod workers get.
	deps *workerDeps
	// ownPuller: the puller New made (Config.Puller nil), waited for by Run.
	ownPuller *images.Puller
	// relist is the relist loop.
	relist *relistLoop

	mu           sync.Mutex
	sources      map[string][]*v1.Pod
	sourcesReady bool
	// ready is closed when sourcesReady is set (see SourcesReady).
	ready      chan struct{}
	numSources int
	// heartbeat: see Heartbeat.
	heartbeat time.Time
	workers   map[types.UID]*podWorker
	runCtx    context.Context
	wg        sync.WaitGroup
	// running: pod UIDs that had a sandbox when Run started (a restarted
	// agent's pods): their first listing is their observed status, never
	// the blank Pending placeholder, so a restart flips no condition.
	running map[types.UID]bool
	// staleCgroupsCleaned: the one-off cleanup of stale pod cgroups ran.
	staleCgroupsCleaned bool
	// orphanVolumesCleaned: the one-off cleanup of orphaned pod
	// directories ran (see maybeCleanOrphanVolumes).
	orphanVolumesCleaned bool
	samples              cpuSamples
}

// New checks cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Runtime == nil || cfg.NodeName == "" {
		return nil, errors.New("agent: Runtime and NodeName are required")
	}
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
	security, err := newSecurityPolicy(cfg.Security)
	if err != nil {
		return nil, err
	}
	var ownPuller *images.Puller
	if cfg.Puller == nil {
		if ownPuller, err = images.NewPuller(cfg.Runtime, cfg.Clock, images.PullerConfig{SerializePulls: true}); err != nil {
			return nil, err
		}
		cfg.Puller = ownPuller
	}
	a := &Agent{
		cfg:       cfg,
		log:       cfg.Logger,
		clock:     cfg.Clock,
		starts:    cfg.Starts,
		teardowns: startgate.New(cfg.MaxParallelStarts),
		updated:   make(chan struct{}, 1),
		ready:     make(chan struct{}),
		events:    cfg.Events,
		sources:   map[string][]*v1.Pod{},
		workers:   map[types.UID]*podWorker{},
		status:    newStatusManager(cfg.PodChanged),
		hooks:     newHookRunner(execOutput(cfg.Runtime)),
		prober:    cfg.Prober,
		ownPuller: ownPuller,
	}
	a.relist = &relistLoop{
		rt: cfg.Runtime, clock: cfg.Clock, log: cfg.Logger, metrics: cfg.Metrics,
		period: cfg.RelistPeriod, exits: cfg.Exits, pods: a,
	}
	a.volumes = &volumeLoops{vm: cfg.Volumes, clock: cfg.Clock, log: cfg.Logger, changes: cfg.ObjectChanges, pods: a}
	a.deps = &workerDeps{
		rt: cfg.Runtime, clock: cfg.Clock, log: cfg.Logger, prober: a.prober,
		starts: a.starts, teardowns: a.teardowns, events: a.events, hooks: a.hooks,
		cgroups: cfg.Cgroups,
		env: podEnv{
			hostIPs: cfg.HostIPs, dns: cfg.DNS, objects: cfg.Objects, allocatable: cfg.Allocatable,
			clusterDomain: cfg.ClusterDomain, services: cfg.Services,
		},
		podsDir: cfg.PodsDir, podLogsDir: cfg.PodLogsDir, resync: cfg.ResyncPeriod,
		relisted: &a.relist.listings, owner: a, status: a.status,
		volumes: cfg.Volumes, objectsChanged: &a.volumes.objectsChanged,
		security: security,
		puller:   cfg.Puller, credentials: cfg.Credentials,
		metricsPort: cfg.Metrics,
	}
	if cfg.ContainerGC != nil {
		a.gc = &containerGC{
			rt: cfg.Runtime, clock: cfg.Clock, log: cfg.Logger, events: a.events, policy: *cfg.ContainerGC,
			period: cfg.ContainerGCPeriod, podLogsDir: cfg.PodLogsDir, pods: a,
		}
	}
	return a, nil
}

// Run starts the sources, the relister and the pod workers, and blocks until
// ctx is done. Cancelling ctx stops skiff, not the pods: containers keep
// running and are adopted at the next start.
func (a *Agent) Run(ctx context.Context, sources map[string]Source) error {
	v, err := a.cfg.Runtime.Version(ctx)
	if err != nil {
		return fmt.Errorf("container runtime: %w", err)
	}
	a.deps.runtimeName = v.Name
	running := a.runningPods(ctx)
	a.mu.Lock()
	a.running = running
	a.runCtx = ctx
	a.numSources = len(sources)
	if len(sources) == 0 {
		a.markSourcesReadyLocked()
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for name, src := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.Run(ctx, func(pods []*v1.Pod) { a.setSource(name, pods) }); err != nil && ctx.Err() == nil {
				a.log.Error("pod source stopped", "source", name, "err", err)
			}
		}()
	}
	for _, l := range a.loops() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(ctx)
		}()
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			a.wg.Wait()
			if a.ownPuller != nil {
				a.ownPuller.Wait() // the workers left: their pulls are cancelled
			}
			return nil
		case <-a.updated:
			a.reconcile(ctx)
		}
	}
}

// setSource records the full set of pods of one source.
func (a *Agent) setSource(name string, pods []*v1.Pod) {
	a.mu.Lock()
	a.sources[name] = pods
	a.mu.Unlock()
	select {
	case a.updated <- struct{}{}:
	default:
	}
}

// wantedLocked returns a source's pod of UID uid, nil if none wants it.
func (a *Agent) wantedLocked(uid types.UID) *v1.Pod {
	for _, pods := range a.sources {
		for _, p := range pods {
			if p.UID == uid {
				return p
			}
		}
	}
	return nil
}

// desired merges all sources; the first source (by name) wins a UID.
func (a *Agent) desired() map[types.UID]*v1.Pod {
	names := make([]string, 0, len(a.sources))
	for n := range a.sources {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[types.UID]*v1.Pod{}
	for _, n := range names {
		for _, p := range a.sources[n] {
			if _, dup := out[p.UID]; !dup {
				out[p.UID] = p
			}
		}
	}
	return out
}

// reconcile starts workers for new pods and kills pods no source wants,
// and those a source deleted (an API pod with a deletionTimestamp) with
// the grace period of the deletion.
func (a *Agent) reconcile(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := a.desired()
	for uid, w := range a.workers {
		p, ok := want[uid]
		switch {
		case !ok:
			w.kill(nil)
			continue
		case p.DeletionTimestamp != nil:
			w.kill(p.DeletionGracePeriodSeconds)
		}
		if p != w.given && !w.orphan {
			w.given = p
			w.update(p)
		}
	}
	uids := make([]types.UID, 0, len(want))
	for uid := range want {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return want[uids[i]].Name < want[uids[j]].Name })
	for _, uid := range uids {
		if _, ok := a.workers[uid]; ok {
			continue
		}
		p := want[uid]
		if finished(p) && !a.running[uid] {
			continue // deleted or terminal, and nothing of it runs here
		}
		w := a.startWorkerLocked(ctx, p, false)
		if p.DeletionTimestamp != nil {
			w.kill(p.DeletionGracePeriodSeconds)
		}
	}
	if len(a.sources) >= a.numSources {
		a.markSourcesReadyLocked()
	}
	a.updateQoSLocked(ctx, want)
}

// finished reports whether a source's pod must not (re)start: it is being
// deleted, or its status (an API pod's, as the API server has it) is
// terminal, as the kubelet never restarts a pod whose phase is Succeeded
// or Failed. Pure.
func finished(p *v1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// startWorkerLocked starts the worker of pod. A pod replacing another of the
// same namespace/name (an edited static pod) waits until the old one has
// terminated, as the kubelet does for static pods.
func (a *Agent) startWorkerLocked(ctx context.Context, pod *v1.Pod, orphan bool) *podWorker {
	var waitFor []<-chan struct{}
	for _, other := range a.workers {
		if other.initial.Namespace == pod.Namespace && other.initial.Name == pod.Name {
			waitFor = append(waitFor, other.done)
		}
	}
	w := newPodWorker(a.deps, pod, waitFor)
	// Only pods that start under this agent have start durations: not
	// what ran before it started (the kubelet's tracker skips pods with
	// a start time), nor orphans.
	w.start = podStart{
		firstSeen: a.clock.Now(),
		done:      orphan || a.running[pod.UID] || pod.Status.StartTime != nil,
	}
	if !orphan {
		a.admitLocked(w)
	}
	if orphan {
		w.orphan = true
		w.kill(nil)
	}
	a.workers[pod.UID] = w
	a.status.track(pod.UID)
	switch {
	case orphan:
	case a.running[pod.UID]:
		// Its first sync publishes what runs (or, if the runtime cannot
		// be observed, the placeholder): see podWorker.placeholderDue.
		w.placeholderDue = true
	default:
		a.status.publish(w.pendingPod())
	}
	delete(a.running, pod.UID)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		w.run(ctx)
	}()
	return w
}

// runningPods returns the UIDs of the pods that have a sandbox in the
// runtime now; nil if it cannot be listed. Blocking (one CRI call).
func (a *Agent) runningPods(ctx context.Context) map[types.UID]bool {
	sbs, err := a.cfg.Runtime.ListSandboxes(ctx, managedSelector())
	if err != nil {
		a.log.Warn("listing sandboxes at start", "err", err)
		return nil
	}
	out := make(map[types.UID]bool, len(sbs))
	for _, sb := range sbs {
		out[types.UID(sb.Labels[labelPodUID])] = true
	}
	return out
}

// workerDone forgets a worker whose pod is gone from the runtime.
func (a *Agent) workerDone(w *podWorker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workers[w.uid] == w {
		delete(a.workers, w.uid)
		a.status.forget(w.uid)
		// A source still wants the pod under this UID (its manifest came
		// back while it terminated): the reconcile below starts it again.
		if p := a.wantedLocked(w.uid); p != nil && !finished(p) {
			a.cfg.Metrics.PodRestarted(isStaticPod(p))
		}
	}
	select {
	case a.updated <- struct{}{}:
	default:
	}
}

// Pod returns a copy of the pod uid as published (spec and status), and
// whether the agent has it. Safe for concurrent use.
func (a *Agent) Pod(uid types.UID) (*v1.Pod, bool) {
	return a.status.pod(uid)
}

// Terminated reports whether nothing of pod uid is left on the node: every
// source has delivered its first list, the agent has no worker for the
// pod (it never started one, or the worker stopped every container,
// removed the sandbox and tore the volumes down), and no sandbox of it was
// found at start that is still to be adopted. A pod deleted through the
// API may be removed from it once this holds (the kubelet's
// canBeDeleted). Safe for concurrent use.
func (a *Agent) Terminated(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, hasWorker := a.workers[uid]
	return a.sourcesReady && !hasWorker && !a.running[uid]
}

// Pods returns the pods this node runs, with status, sorted by namespace and
// name. The returned objects are copies. Safe for concurrent use.
func (a *Agent) Pods() []*v1.Pod {
	return a.status.pods()
}

// Events returns the recent events of this node's pods, oldest first
// (copies). Safe for concurrent use.
func (a *Agent) Events() []v1.Event { return a.events.List() }

// Exec runs cmd in a running container of the pod namespace/name and waits
// for it, at most timeout (0: no limit). container may be empty when the pod
// has one container. A non-zero exit code is not an error; no such pod or
// container is an error wrapping runtime.ErrNotFound. Safe for concurrent
// use; blocking.
func (a *Agent) Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	id, err := a.status.runningContainerID(namespace, name, container)
	if err != nil {
		return nil, err
	}
	return a.cfg.Runtime.ExecSync(ctx, id, cmd, timeout)
}

// containerIDFromStatus is the runtime's ID of a status's containerID
// (<runtime>://<id>, any runtime).
func containerIDFromStatus(s string) string {
	if _, id, ok := strings.Cut(s, "://"); ok {
		return id
	}
	return s
}

// Healthz reports whether the runtime answers.
func (a *Agent) Healthz(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := a.cfg.Runtime.Version(ctx); err != nil {
		return fmt.Errorf("container runtime: %w", err)
	}
	return nil
}

// WakeAll asks every worker to sync now (e.g. after images were imported).
// Safe for concurrent use.
func (a *Agent) WakeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.workers {
		w.wake()
	}
}
