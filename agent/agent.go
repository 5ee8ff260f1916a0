// Package agent runs pods: it merges the desired pods of its sources, keeps
// one worker goroutine per pod UID, and publishes pod status.
//
// Data flow: sources -> Agent.setSource -> reconcile (start/kill workers)
// -> podWorker loop: observe runtime state -> computePodActions (pure) ->
// apply -> computePodStatus (pure) -> publish (the statusManager, which
// answers Pod and Pods). A relister lists the runtime once a period and
// wakes workers whose containers changed, and kills sandboxes that no
// source wants (orphans, e.g. a manifest deleted while skiff was down).
//
// The agent's loops (Agent.loops: the relist, the volume loops, the
// container GC) are types of their own that reach the Agent through narrow
// ports (ports.go); a worker reaches it through workerDeps' ports.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/internal/k8sversion"
	"github.com/skiffnode/skiff/internal/nodefeatures"
	"github.com/skiffnode/skiff/internal/startgate"
)

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
	// relist, volumes and gc are the loops (see loops).
	relist  *relistLoop
	volumes *volumeLoops
	// gc: nil without Config.ContainerGC.
	gc *containerGC
	// deps are what the pod workers get.
	deps *workerDeps
	// ownPuller: the puller New made (Config.Puller nil), waited for by Run.
	ownPuller *images.Puller

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
	// orphanUsernsReleased: the one-off release of orphaned pods' user
	// namespaces ran (see releaseOrphanUserNamespaces).
	orphanUsernsReleased bool
	samples              cpuSamples
}

// New checks cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Runtime == nil || cfg.NodeName == "" {
		return nil, errors.New("agent: Runtime and NodeName are required")
	}
	cfg.setDefaults()
	security, err := newSecurityPolicy(cfg.Security)
	if err != nil {
		return nil, err
	}
	if cfg.DeclaredFeatures == nil {
		if cfg.DeclaredFeatures, err = nodefeatures.New(k8sversion.KubeletVersion, nodefeatures.Implemented()); err != nil {
			return nil, err
		}
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
		puller:   cfg.Puller, credentials: cfg.Credentials, userns: cfg.UserNamespaces,
		rro:         cfg.RuntimeFeatures.RecursiveReadOnlyMounts,
		limits:      newContainerLimits(cfg),
		restartMax:  cfg.MaxContainerRestartPeriod,
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
			a.checkUpdateFeatures(w.given, p)
			w.given = p
			a.resizeLocked(w, p)
			w.update(p)
		}
	}
	uids := make([]types.UID, 0, len(want))
	for uid := range want {
		uids = append(uids, uid)
	}
	// Pods that already run (after an agent restart) are admitted first,
	// so that one that arrived meanwhile cannot take their host ports or
	// resources; then by name.
	sort.Slice(uids, func(i, j int) bool {
		if ri, rj := a.running[uids[i]], a.running[uids[j]]; ri != rj {
			return ri
		}
		return want[uids[i]].Name < want[uids[j]].Name
	})
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
	a.retryResizesLocked()
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
	if a.running[pod.UID] {
		w.adoptAllocation(allocationFromStatus(pod))
	}
	// Only pods that start under this agent have start durations: not
	// what ran before it started (the kubelet's tracker skips pods with
	// a start time), nor orphans.
	w.start = podStart{
		firstSeen: a.clock.Now(),
		done:      orphan || a.running[pod.UID] || pod.Status.StartTime != nil,
	}
	if !orphan {
		a.admitLocked(w)
		a.resizeLocked(w, pod) // a resize still pending when the agent stopped
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

// WakeAll asks every worker to sync now (e.g. after images were imported).
// Safe for concurrent use.
func (a *Agent) WakeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.workers {
		w.wake()
	}
}
