package agent

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"

	"k8s.io/utils/clock"
)

// startPriority orders the waiters of a StartGate.
type startPriority int

const (
	// prioContainer is a container start of a pod whose sandbox exists.
	prioContainer startPriority = iota
	// prioSandbox is a new sandbox.
	prioSandbox
	numPriorities
)

// StartGate bounds concurrent sandbox and container starts (the runtime's
// throughput on a small node is the limit, not the agent). Waiters of a
// higher priority are served first: a pod already on its way gets its
// containers started before the next pod's sandbox, so that when many pods
// arrive at once the first ones run early instead of every sandbox being
// created before any container (issue 5, density). Within a priority,
// waiters are served in arrival order. The agent bounds sandbox teardowns
// with a second gate (see killAll).
//
// The limit is adaptive (issue 13) or fixed: a limitController sees every
// finished start and moves the limit to where completed starts per second
// stop rising; a lowered limit takes effect as starts finish (none is
// interrupted). Safe for concurrent use; it owns no goroutine.
type StartGate struct {
	mu       sync.Mutex
	limit    int
	inFlight int
	// ctl and clk are set on an adaptive gate only.
	ctl     *limitController
	clk     clock.PassiveClock
	waiters [numPriorities][]chan struct{}
	// idleCh is closed while no slot is taken and nobody waits; a new one
	// is made when the gate gets busy (see idle).
	idleCh chan struct{}
}

// defaultStarts is the least limit of an adaptive gate: max(2, CPUs), so
// a single pod never waits for a slot and a burst begins where the old
// fixed default was.
func defaultStarts() int { return max(2, goruntime.NumCPU()) }

// maxAdaptiveStarts is the most a default gate lets in flight:
// 4*CPUs within [16, 64].
func maxAdaptiveStarts() int { return min(64, max(16, 4*goruntime.NumCPU())) }

// NewStartGate returns a gate for --max-parallel-starts n (issue 13: no
// fixed number that fits only one runtime). The limit adapts (see
// limitController), timed by the real clock: with n <= 0 (the default)
// from defaultStarts() up to maxAdaptiveStarts(), with n > 0 up to n from
// min(defaultStarts(), n); n at or below defaultStarts() is a fixed n.
func NewStartGate(n int) *StartGate {
	lo, hi := startBounds(n)
	if lo == hi {
		return newStartGate(hi)
	}
	return newAdaptiveStartGate(clock.RealClock{}, lo, hi)
}

// startBounds is the [lo, hi] range NewStartGate(n) adapts within.
func startBounds(n int) (lo, hi int) {
	if n <= 0 {
		return defaultStarts(), maxAdaptiveStarts()
	}
	return min(defaultStarts(), n), n
}

// newStartGate returns a gate with a fixed limit of n (at least 1).
func newStartGate(n int) *StartGate {
	idle := make(chan struct{})
	close(idle)
	return &StartGate{limit: max(n, 1), idleCh: idle}
}

// newAdaptiveStartGate returns a gate whose limit starts at lo and adapts
// within [lo, hi] (see limitController), reading the time from clk.
func newAdaptiveStartGate(clk clock.PassiveClock, lo, hi int) *StartGate {
	ctl := newLimitController(lo, hi)
	g := newStartGate(ctl.Limit())
	g.ctl, g.clk = ctl, clk
	return g
}

// Limit is the number of starts the gate lets in flight now. Safe for
// concurrent use.
func (g *StartGate) Limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

// idle returns a channel that is closed once the gate is idle: no start in
// flight and none waiting. It is already closed if the gate is idle now.
// Probes use it to let repeated checks yield to container starts (see
// probes.Config.StartsIdle). Safe for concurrent use; never blocks.
func (g *StartGate) Idle() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idleCh
}

// busyLocked records that a slot was taken or a waiter queued.
func (g *StartGate) busyLocked() {
	select {
	case <-g.idleCh:
		g.idleCh = make(chan struct{})
	default:
	}
}

// acquire blocks until it holds a slot or ctx ends. The returned release
// gives the slot back (or hands it to the next waiter); call it exactly
// once, when the start finished: on an adaptive gate, its time counts.
func (g *StartGate) acquire(ctx context.Context, p startPriority) (release func(), err error) {
	g.mu.Lock()
	g.busyLocked()
	if g.inFlight < g.limit && !g.anyWaiterLocked() {
		g.inFlight++
		g.mu.Unlock()
		return g.release, nil
	}
	ch := make(chan struct{})
	g.waiters[p] = append(g.waiters[p], ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return g.release, nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if i := slices.Index(g.waiters[p], ch); i >= 0 {
			g.waiters[p] = slices.Delete(g.waiters[p], i, i+1)
			g.idleIfLocked()
			return nil, ctx.Err()
		}
		// Granted while giving up: pass the slot on; no start ran.
		g.finishLocked(false)
		return nil, ctx.Err()
	}
}

func (g *StartGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finishLocked(true)
}

// finishLocked gives a slot back; ran: a start ran in it (an adaptive gate
// learns from its finish time). Then it hands free slots to waiters.
func (g *StartGate) finishLocked(ran bool) {
	g.inFlight--
	if ran && g.ctl != nil {
		g.limit = g.ctl.Observe(startSample{End: g.clk.Now(), Queued: g.anyWaiterLocked()})
	}
	g.grantLocked()
	g.idleIfLocked()
}

// grantLocked hands free slots to the first waiters of the highest
// priority.
func (g *StartGate) grantLocked() {
	for g.inFlight < g.limit {
		p := slices.IndexFunc(g.waiters[:], func(q []chan struct{}) bool { return len(q) > 0 })
		if p < 0 {
			return
		}
		ch := g.waiters[p][0]
		g.waiters[p] = g.waiters[p][1:]
		g.inFlight++
		close(ch)
	}
}

// idleIfLocked closes idleCh if no slot is taken and nobody waits.
func (g *StartGate) idleIfLocked() {
	if g.inFlight > 0 || g.anyWaiterLocked() {
		return
	}
	select {
	case <-g.idleCh:
	default:
		close(g.idleCh)
	}
}

func (g *StartGate) anyWaiterLocked() bool {
	for _, q := range g.waiters {
		if len(q) > 0 {
			return true
		}
	}
	return false
}
