package probes

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// probeKey names a worker: one probe kind of one container of one pod.
type probeKey struct {
	podUID    types.UID
	container string
	kind      Kind
}

// workerOwner is what a worker reports to (the Manager). Its methods are
// called from the worker's goroutine and must be safe for concurrent use.
type workerOwner interface {
	// setResult stores a verdict of w.
	setResult(w *worker, r Result)
	// started reports whether w's container has started, i.e. has no
	// startup probe or its startup probe succeeded (B.11).
	started(w *worker) bool
	// event records an event about w's container.
	event(w *worker, eventType, reason, message string)
}

// workerParams are the inputs of newWorker.
type workerParams struct {
	// pod is the pod given to AddContainer (read-only), for events.
	pod       *v1.Pod
	key       probeKey
	spec      *v1.Probe
	target    target
	startedAt time.Time
	jitter    time.Duration
	// tickGrid: see Config.TickGrid.
	tickGrid time.Duration
	clock    clock.WithTicker
	handlers *handlers
	owner    workerOwner
	log      *slog.Logger
	// startsIdle: see Config.StartsIdle; nil: rounds never yield.
	startsIdle func() <-chan struct{}
	// afterIteration, if set, is called after every probe round (tests).
	afterIteration func(Kind)
}

// worker probes one container with one probe, every period, from one
// goroutine (run), as the kubelet's prober worker:
//
//	start -> [jitter] -> round -> wait period (or a poke) -> [yield] -> round -> ...
//	round: before initialDelay since the container started: skip
//	       liveness/readiness while the container has not started: skip
//	       probe; an error is thrown away; the same result successThreshold
//	       (failureThreshold) times in a row becomes the verdict (setResult)
//	       liveness Failure or any startup verdict: stop (on hold until
//	       the Manager replaces the worker for a new container ID)
//
// A worker belongs to one container ID; the Manager replaces it when the
// container is restarted.
type worker struct {
	workerParams
	timing timing

	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
	trigger chan struct{} // 1-buffered: run a round now (see poke)
	probing atomic.Bool   // a probe handler runs (see poke)

	// Owned by the run goroutine.
	lastResult Result
	resultRun  int    // how many rounds in a row returned lastResult
	verdict    Result // the last verdict given to the owner
}

// newWorker returns a worker whose run stops when parent is done or stop is
// called.
func newWorker(parent context.Context, p workerParams) *worker {
	ctx, cancel := context.WithCancel(parent)
	return &worker{
		workerParams: p,
		timing:       timingOf(p.spec),
		ctx:          ctx,
		cancel:       cancel,
		done:         make(chan struct{}),
		trigger:      make(chan struct{}, 1),
		verdict:      p.key.kind.initialResult(),
	}
}

// stop asks the worker to stop; it does not wait (see done). Idempotent.
func (w *worker) stop() { w.cancel() }

// poke asks the worker to run its next round now instead of at the next
// tick, like the kubelet's manual trigger. It never blocks; pokes while one
// is pending are merged, a poke during the first jitter is kept until the
// first round, and a poke while a probe runs is dropped: that probe's
// verdict is what the caller waits for. The ticker is not reset.
func (w *worker) poke() {
	if w.probing.Load() {
		return
	}
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// run probes until the worker is stopped or goes on hold. It closes done
// when it returns.
func (w *worker) run() {
	defer close(w.done)
	if w.jitter > 0 && !w.sleep(w.jitter) {
		return
	}
	var ticker clock.Ticker
	if w.tickGrid <= 0 {
		ticker = w.clock.NewTicker(w.timing.period)
	}
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		keepGoing := w.round()
		if w.afterIteration != nil {
			w.afterIteration(w.key.kind)
		}
		if !keepGoing {
			return
		}
		if ticker == nil { // on the grid, after the first round
			if d := untilGrid(w.clock.Now(), w.tickGrid); d > 0 && !w.sleep(d) {
				return
			}
			ticker = w.clock.NewTicker(w.timing.period)
		}
		select {
		case <-w.ctx.Done():
			return
		case <-ticker.C():
			if !w.yieldToStarts(ticker) {
				return
			}
		case <-w.trigger:
		}
	}
}

// untilGrid returns how long from now until the next multiple of grid
// (time.Truncate's: since the zero time, so the same instants for every
// worker); 0 when now is on one. Pure.
func untilGrid(now time.Time, grid time.Duration) time.Duration {
	if d := now.Sub(now.Truncate(grid)); d > 0 {
		return grid - d
	}
	return 0
}

// yieldToStarts delays a round that yields (see yields) while the node
// starts containers, until it no longer does or maxYield ticks have passed.
// It returns false if the worker was stopped.
//
// Why: every exec probe is a runc exec in the runtime, ~0.1-0.15 s of CPU
// here, half the cost of a container start. With 110 pods and a 10 s exec
// readiness probe, the re-checks of pods already running took a third of a
// 2-core node while the rest waited to start (issue 5, density: 94 s where
// the bare CRI calls take 44-60 s); at steady state those probes alone take
// 1.6 cores. A first probe, a readiness probe that could make a container
// ready, and a startup probe never yield.
func (w *worker) yieldToStarts(ticker clock.Ticker) bool {
	if w.startsIdle == nil || !yields(w.spec, w.key.kind, w.verdict) {
		return true
	}
	idle := w.startsIdle()
	for range maxYield(w.key.kind) {
		select {
		case <-w.ctx.Done():
			return false
		case <-idle:
			return true
		case <-w.trigger:
			return true
		case <-ticker.C():
		}
	}
	return true
}

// maxYield is how many periods a round of kind may wait for starts: a
// readiness re-check of a ready container only confirms what the pod's
// status already says, so it waits for a burst of starts to end (bounded,
// in case starts never stop); a liveness check guards against a hung
// container and waits at most one period.
func maxYield(kind Kind) int {
	if kind == Readiness {
		return 6
	}
	return 1
}

// yields reports whether a round of probe spec of kind, whose current
// verdict is verdict, can wait for container starts: an exec liveness
// probe, or an exec readiness probe of a ready container. Pure.
func yields(spec *v1.Probe, kind Kind, verdict Result) bool {
	return spec.Exec != nil && kind != Startup && verdict == Success
}

// sleep waits d on the worker's clock; false if the worker was stopped.
func (w *worker) sleep(d time.Duration) bool {
	t := w.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// round runs one probe round and reports whether the worker should go on.
// A panic in a prober is logged and the round thrown away, so one bad
// probe cannot take the agent down (the kubelet does the same).
func (w *worker) round() (keepGoing bool) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("probe panicked", "panic", fmt.Sprint(r))
			keepGoing = true
		}
	}()
	if w.ctx.Err() != nil {
		return false
	}
	if w.clock.Since(w.startedAt) < w.timing.initialDelay {
		return true // B.14: no probe before initialDelaySeconds
	}
	if w.key.kind != Startup && !w.owner.started(w) {
		return true // B.11: liveness and readiness wait for the startup probe
	}
	w.probing.Store(true)
	res, err := w.handlers.probe(w.ctx, w.key.kind, w.spec, w.target, w.event, w.log)
	w.probing.Store(false)
	if w.ctx.Err() != nil {
		return false
	}
	if err != nil {
		return true // the round says nothing about the container
	}
	return w.record(res)
}

// record counts res against the thresholds and, once one is crossed,
// reports the verdict. It returns false when the worker goes on hold.
func (w *worker) record(res Result) bool {
	if res == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = res, 1
	}
	if (res == Failure && w.resultRun < w.timing.failureThreshold) ||
		(res == Success && w.resultRun < w.timing.successThreshold) {
		return true // below the threshold: the result stands
	}
	w.owner.setResult(w, res)
	w.verdict = res
	if (w.key.kind == Liveness && res == Failure) || w.key.kind == Startup {
		// The container will be restarted (liveness/startup failure) or has
		// started: probing it again is pointless, and exec into a dying
		// container can hurt (kubernetes#21751, #117153).
		w.log.Debug("probe on hold until the container is replaced", "result", res)
		return false
	}
	return true
}

// event records an event about the worker's container.
func (w *worker) event(eventType, reason, message string) {
	w.owner.event(w, eventType, reason, message)
}
