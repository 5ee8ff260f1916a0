package agent

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// podWorker owns one pod: only its goroutine changes the pod's containers.
// Other goroutines talk to it through wake and kill.
//
//	            kill()
//	syncing ------------> terminating --(all removed)--> done
//	   ^  |                    |
//	   +--+ wake/timer         +-- agent shutdown: stop; the next skiff
//	                               start resumes termination (A.47)
type podWorker struct {
	d   *workerDeps
	uid types.UID
	// pod is the pod the worker works from: desired with the allocated
	// container resources (worker goroutine only; see takeUpdate).
	pod *v1.Pod
	// desired is the source's newest object of the pod (worker goroutine
	// only); allocVersion the version of the allocation pod has.
	desired      *v1.Pod
	allocVersion uint64
	// resize is the pod's allocation (resize.go), shared with the agent.
	resize *resizeState
	// inProgress is the PodResizeInProgress condition (worker goroutine
	// only; resize_apply.go), nil: none.
	inProgress *v1.PodCondition
	// stoppedStatus: the pod is terminating and its containers stopped
	// (worker goroutine only; publishStopped).
	stoppedStatus bool
	// initial is the pod as first given: immutable, read by the agent
	// under its lock (admission, same-name checks).
	initial *v1.Pod
	// given is the object the agent last gave (the agent's lock): a
	// source's new object of the pod goes to update.
	given  *v1.Pod
	log    *slog.Logger
	wakeCh chan struct{}
	done   chan struct{}
	// waitFor: workers of an older pod of the same name that must finish first.
	waitFor []<-chan struct{}

	// orphan: a pod no source wants, found in the runtime; never published.
	orphan bool
	// placeholderDue: the pod already ran when the agent started and is
	// not listed yet; it is published by its first status, or as the
	// Pending placeholder once observing it fails (worker goroutine only).
	placeholderDue bool

	// relistChanges counts the listings that found the pod's runtime
	// state changed or gone (see Agent.relistSaw, canSkipResync).
	relistChanges atomic.Uint64

	// stopped: the pod is terminating and its containers and sandboxes
	// are stopped; only removal is left, so it no longer counts for
	// admission (the kubelet's IsPodKnownTerminated).
	stopped atomic.Bool

	// req: what other goroutines asked of the worker.
	req podRequests

	// Owned by the worker goroutine.
	// backoff holds the restart back-offs, pulls the image pull back-offs.
	backoff, pulls *backoff
	// pullErrs: the last pull error per pull back-off key, for the
	// ImagePullBackOff message.
	pullErrs  map[string]string
	waiting   map[string]waitingState
	status    *v1.PodStatus
	startTime time.Time
	// inPostStart: containers whose postStart hook is running (C.3).
	inPostStart map[string]bool
	// failure ends the pod for good (DeadlineExceeded, A.9).
	failure *podFailure
	// marks: what the worker remembers of container instances.
	marks containerMarks
	// rejected: admission refused the pod (set before the worker runs).
	rejected bool
	// resync decides whether a due resync may skip its runtime calls.
	resync resyncState
	// volumeRetry backs off failed volume set-ups.
	volumeRetry volumeRetry
	// synced: the worker synced the pod at least once (see
	// syncOperation).
	synced bool
	// start follows the pod's start for its start durations (set by
	// the agent as it takes the pod on).
	start podStart
}

func newPodWorker(d *workerDeps, pod *v1.Pod, waitFor []<-chan struct{}) *podWorker {
	return &podWorker{
		d:        d,
		uid:      pod.UID,
		pod:      pod,
		desired:  pod,
		resize:   newResizeState(pod),
		initial:  pod,
		given:    pod,
		log:      d.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID),
		wakeCh:   make(chan struct{}, 1),
		done:     make(chan struct{}),
		waitFor:  waitFor,
		backoff:  newRestartBackoff(d.restartMax),
		pulls:    newBackoff(),
		pullErrs: map[string]string{},
		waiting:  map[string]waitingState{},

		inPostStart: map[string]bool{},
		marks:       newContainerMarks(),
	}
}

// event records an event about container name of the pod ("" = the pod).
func (w *podWorker) event(name, typ, reason, msg string) {
	if w.orphan {
		return
	}
	if name == "" {
		w.d.events.PodEvent(w.pod, typ, reason, msg)
		return
	}
	w.d.events.ContainerEvent(w.pod, name, typ, reason, msg)
}

// wake asks the worker to sync soon. Non-blocking, safe for concurrent use.
func (w *podWorker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

// kill asks the worker to terminate the pod, with grace (seconds) if set,
// else the pod's terminationGracePeriodSeconds. Idempotent, non-blocking.
func (w *podWorker) kill(grace *int64) {
	w.req.kill(grace)
	w.wake()
}

// update gives the worker a newer object of its pod; the next sync
// works from it. Idempotent, non-blocking.
func (w *podWorker) update(p *v1.Pod) {
	w.req.update(p)
	w.wake()
}

// takeUpdate makes the newest object given by update the desired pod, and
// the worker's pod that with the current allocation (worker goroutine
// only); it reports whether there was a new object. Volumes that show the
// pod's metadata (downwardAPI) are rewritten with it, as the kubelet's
// volume manager does on its next pass.
func (w *podWorker) takeUpdate(ctx context.Context) bool {
	p := w.req.takeUpdate()
	updated := p != nil && p != w.desired
	if updated {
		w.desired = p
	}
	alloc, version, accepted, newer := w.resize.allocationSince(w.allocVersion)
	if !updated && version == w.allocVersion {
		return false
	}
	w.takeAllocation(version, accepted, newer)
	w.pod = withAllocation(w.desired, alloc)
	if updated && w.d.volumes != nil && len(p.Spec.Volumes) > 0 {
		if _, err := w.d.volumes.SetUp(ctx, w.pod); err != nil && ctx.Err() == nil {
			w.log.Warn("updating volumes", "err", err)
		}
	}
	return updated
}

// run is the worker loop; it returns when the pod is gone or ctx is done.
func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	for _, ch := range w.waitFor {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
	timedOut := false
	killRetry := time.Duration(0)
	for {
		if term, grace := w.req.isTerminating(); term {
			if w.terminate(ctx, grace) {
				w.d.owner.workerDone(w)
				return
			}
			// A kill that failed is tried again after a back-off that no
			// wake shortens (a busy node wakes its pods often): 1 s,
			// doubling to the kubelet's 10 s worker back-off.
			killRetry = min(max(2*killRetry, time.Second), killRetryMax)
			if !w.sleep(ctx, killRetry) {
				return
			}
			continue
		} else {
			next := w.d.resync
			// Only the resync timer may be skipped: a wake or any other
			// timer (retry, back-off, deadline) has idle false.
			if timedOut && canSkipResync(w.resync, w.relistMark()) {
				w.resync.skipped++
			} else {
				next = w.sync(ctx)
			}
			var ok bool
			if ok, timedOut = w.waitForWork(ctx, next); !ok {
				return
			}
			continue
		}
	}
}

// killRetryMax bounds the back-off between failed kills of a pod: the
// kubelet's pod worker back-off after a failed sync.
const killRetryMax = 10 * time.Second

// sleep waits d on the worker's clock; false when ctx ended first. Wakes
// stay pending for the next waitForWork.
func (w *podWorker) sleep(ctx context.Context, d time.Duration) bool {
	t := w.d.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// waitForWork blocks until a wake, the timer, or ctx; ok is false on ctx
// done, timedOut true when the timer (not a wake) ended the wait.
func (w *podWorker) waitForWork(ctx context.Context, d time.Duration) (ok, timedOut bool) {
	if d <= 0 {
		select {
		case <-ctx.Done():
			return false, false
		default:
			return true, false
		}
	}
	t := w.d.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, false
	case <-w.wakeCh:
		return true, false
	case <-t.C():
		return true, true
	}
}

// sync observes, plans, applies and publishes status. It returns when to
// sync again (0: at once, because it made progress).
//
// It also sets w.resync: a sync that leaves nothing pending lets the
// resyncs after it be skipped while the relist sees no change (see
// canSkipResync). Each sync is timed for Metrics.PodWorkerDuration (a
// skipped resync is no sync), and the pod's start recorded once all of its
// containers run (podStart).
func (w *podWorker) sync(ctx context.Context) time.Duration {
	rt := w.d.rt
	begin := w.d.clock.Now()
	op := w.syncOperation(w.takeUpdate(ctx))
	defer w.observePass(op, begin)
	w.resync = resyncState{mark: w.relistMark()}
	st, err := observe(ctx, rt, string(w.uid))
	if err != nil {
		w.log.Warn("cannot observe pod", "err", err)
		if w.placeholderDue {
			w.placeholderDue = false
			w.d.status.publish(w.pendingPod())
		}
		return 2 * time.Second
	}
	now := w.d.clock.Now()
	deadline := w.settle(ctx, st, now)
	x := planExtras{
		Started:       func(name, _ string) bool { return w.d.prober.Started(w.uid, name) },
		ProbeFailed:   w.syncProbes(st),
		Failure:       w.failure,
		RestartAnyway: w.marks.probeKilled,
		KillChecked:   w.marks.killChecked,
		Actuated:      w.actuated,
		Limits:        w.d.limits,
	}
	acts := computePodActions(w.pod, st, now, w.backoff, x)
	for _, id := range acts.CheckedKills {
		w.marks.killChecked[id] = true
	}
	progressed, retry := w.apply(ctx, st, acts)
	if !acts.Terminal && !acts.CreateSandbox {
		retry = soonest(retry, w.applyResize(ctx, acts.Resize, acts.ResizeRestarts > 0))
	}
	if acts.Terminal && retry == 0 {
		w.req.terminationDone()
	}
	fresh := w.takeWaiting(acts.Waiting)
	w.publishStatusHiding(st, now, fresh)
	w.recordStart(now)
	next := w.d.resync
	switch {
	case progressed:
		return 0
	case retry > 0:
		next = retry
	case acts.RequeueAfter > 0:
		next = acts.RequeueAfter
	}
	if len(fresh) > 0 && next > backOffShownAfter {
		next = backOffShownAfter
	}
	if deadline > 0 && deadline < next {
		next = deadline
	}
	// Only when the resync is all that is pending may it be skipped; a
	// deadline further than the resync still needs its time checked.
	w.resync.idle = retry == 0 && acts.RequeueAfter == 0 && deadline == 0 && len(fresh) == 0
	return next
}

// backOffShownAfter is how long a container that exited shows as
// terminated before its CrashLoopBackOff (the kubelet's next sync after
// the back-off decision, at most its PLEG relist period later).
const backOffShownAfter = time.Second

// takeWaiting records the planner's waiting states, with a BackOff event
// for each new or changed one, and returns the containers whose restart
// back-off is new: their status shows the exit (terminated, reason and
// exit code) until the next sync, as the kubelet's status is generated
// before the sync that decides the back-off.
func (w *podWorker) takeWaiting(waiting map[string]waitingState) (fresh map[string]bool) {
	for name, ws := range waiting {
		prev, ok := w.waiting[name]
		if !ok || prev != ws {
			w.event(name, v1.EventTypeWarning, EventBackOff, fmt.Sprintf("Back-off restarting failed container %s in pod %s", name, podDesc(w.pod)))
		}
		if ws.Reason == reasonCrashLoopBackOff && (!ok || prev.Reason != reasonCrashLoopBackOff) {
			if fresh == nil {
				fresh = map[string]bool{}
			}
			fresh[name] = true
		}
		w.waiting[name] = ws
	}
	return fresh
}

// settle brings what the worker keeps up to the observation st at now,
// before it plans: the pod's start time, the termination messages and OOM
// kills of exited containers, the requested eviction or TerminatePod, the
// active deadline (it returns the time left, 0: none), and it forgets the
// marks and back-offs that no longer apply.
func (w *podWorker) settle(ctx context.Context, st *podState, now time.Time) (deadline time.Duration) {
	if w.startTime.IsZero() {
		w.startTime = now
		if sb := st.sandbox(); sb != nil {
			w.startTime = sb.CreatedAt
		}
	}
	w.fillTerminationMessages(ctx, st)
	w.settleOOM(st)
	w.takeEviction()
	w.takeTermination()
	deadline = w.checkDeadline(now)
	w.marks.pruneProbeKilled(st)
	w.backoff.prune(now)
	w.pulls.prune(now)
	return deadline
}

// checkDeadline fails the pod once it ran longer than activeDeadlineSeconds
// (A.9) and otherwise returns the time left (0: no deadline).
func (w *podWorker) checkDeadline(now time.Time) time.Duration {
	ads := w.pod.Spec.ActiveDeadlineSeconds
	if ads == nil || w.failure != nil {
		return 0
	}
	left := w.startTime.Add(time.Duration(*ads) * time.Second).Sub(now)
	if left > 0 {
		return left
	}
	msg := "Pod was active on the node longer than the specified deadline"
	w.failure = &podFailure{Reason: "DeadlineExceeded", Message: msg}
	w.event("", v1.EventTypeNormal, EventDeadlineExceeded, msg)
	w.log.Info("pod exceeded its active deadline")
	return 0
}

// fillTerminationMessages adds the termination message to exited
// containers, reading each file once (A.40, A.41).
func (w *podWorker) fillTerminationMessages(ctx context.Context, st *podState) {
	for i, cs := range st.Containers {
		if cs.State != runtime.ContainerExited {
			continue
		}
		msg, ok := w.marks.termMessages[cs.ID]
		if !ok {
			msg = terminationMessage(ctx, cs)
			w.marks.termMessages[cs.ID] = msg
		}
		st.Containers[i] = withMessage(cs, msg)
	}
}

func (w *podWorker) publishStatus(st *podState, now time.Time) {
	w.publishStatusHiding(st, now, nil)
}

// publishStatusHiding publishes the pod's status, without the waiting
// states of the containers in hide (see takeWaiting).
func (w *podWorker) publishStatusHiding(st *podState, now time.Time, hide map[string]bool) {
	if w.orphan {
		return
	}
	waiting := w.waiting
	if len(hide) > 0 {
		waiting = maps.Clone(w.waiting)
		for name := range hide {
			delete(waiting, name)
		}
	}
	s := computePodStatus(statusInput{
		Pod: w.pod, State: st, Waiting: waiting, Previous: w.status,
		HostIPs: w.d.env.hostIPs, StartTime: w.startTime, Now: now,
		Ready:             func(name string) bool { return w.d.prober.Ready(w.uid, name) },
		Started:           func(name string) bool { return w.d.prober.Started(w.uid, name) },
		InPostStart:       w.inPostStart,
		Failure:           w.failure,
		RestartAnyway:     w.marks.probeKilled,
		RuntimeName:       w.d.runtimeName,
		RecursiveReadOnly: w.d.rro,
		Actuated:          w.actuated,
		ResizeConditions:  w.resizeConditions(),
		Stopped:           w.stoppedStatus && !isStaticPod(w.pod),
	})
	w.status = &s
	w.placeholderDue = false
	p := w.pod.DeepCopy()
	p.Status = s
	if p.CreationTimestamp.IsZero() {
		// With no API server to stamp it, a pod exists on this node since
		// the agent took it on (or since its adopted sandbox was created),
		// which is what `skiff pods` shows as AGE.
		p.CreationTimestamp = metav1.NewTime(w.startTime)
	}
	if term, _ := w.req.isTerminating(); term {
		t := metav1.NewTime(now)
		p.DeletionTimestamp = &t
		p.DeletionGracePeriodSeconds = w.graceSeconds(nil)
	}
	w.d.status.publish(p)
}

// pendingPod is the pod as first published, before any sync.
func (w *podWorker) pendingPod() *v1.Pod {
	p := w.pod.DeepCopy()
	p.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: qosClass(w.pod)}
	if p.CreationTimestamp.IsZero() {
		p.CreationTimestamp = metav1.NewTime(w.d.clock.Now())
	}
	return p
}
