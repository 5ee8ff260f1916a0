// Package startgate bounds the sandbox and container starts in flight on a
// node: a Gate with two priorities (a started pod's containers before the
// next pod's sandbox) whose limit adapts to the runtime's throughput.
package startgate

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"

	"k8s.io/utils/clock"
)

// Priority orders the waiters of a Gate.
type Priority int

const (
	// Container is a container start of a pod whose sandbox exists.
	Container Priority = iota
	// Sandbox is a new sandbox.
	Sandbox
	numPriorities
)

// Gate bounds concurrent sandbox and container starts (the runtime's
// throughput on a small node is the limit, not the agent). Waiters of a
// higher priority are served first: a pod already on its way gets its
// containers started before the next pod's sandbox, so that when many pods
// arrive at once the first ones run early instead of every sandbox being
// created before any container (issue 5, density). Within a priority,
// waiters are served in arrival order. The agent bounds sandbox teardowns
// with a second gate (see the agent's killAll).
//
// The limit is adaptive (issue 13) or fixed: a limitController sees every
// finished start and moves the limit to where completed starts per second
// stop rising; a lowered limit takes effect as starts finish (none is
// interrupted). Safe for concurrent use; it owns no goroutine.
type Gate struct {
	mu       sync.Mutex
	limit    int
	inFlight int
	// ctl and clk are set on an adaptive gate only.
	ctl     *limitController
	clk     clock.PassiveClock
	waiters [numPriorities][]chan struct{}
	// idleCh is closed while no slot is taken and nobody waits; a new one
	// is made when the gate gets busy (see Idle).
	idleCh chan struct{}
}

// defaultStarts is the least limit of an adaptive gate: max(2, CPUs), so
// a single pod never waits for a slot and a burst begins where the old
// fixed default was.
func defaultStarts() int { return max(2, goruntime.NumCPU()) }

// maxAdaptiveStarts is the most a default gate lets in flight:
// 4*CPUs within [16, 64].
func maxAdaptiveStarts() int { return min(64, max(16, 4*goruntime.NumCPU())) }

// New returns a gate for --max-parallel-starts n (issue 13: no
// fixed number that fits only one runtime). The limit adapts (see
// limitController), timed by the real clock: with n <= 0 (the default)
// from defaultStarts() up to maxAdaptiveStarts(), with n > 0 up to n from
// min(defaultStarts(), n); n at or below defaultStarts() is a fixed n.
func New(n int) *Gate {
	lo, hi := startBounds(n)
	if lo == hi {
		return newGate(hi)
	}
	return newAdaptiveGate(clock.RealClock{}, lo, hi)
}

// startBounds is the [lo, hi] range New(n) adapts within.
func startBounds(n int) (lo, hi int) {
	if n <= 0 {
		return defaultStarts(), maxAdaptiveStarts()
	}
	return min(defaultStarts(), n), n
}

// newGate returns a gate with a fixed limit of n (at least 1).
func newGate(n int) *Gate {
	idle := make(chan struct{})
	close(idle)
	return &Gate{limit: max(n, 1), idleCh: idle}
}

// newAdaptiveGate returns a gate whose limit starts at lo and adapts
// within [lo, hi] (see limitController), reading the time from clk.
func newAdaptiveGate(clk clock.PassiveClock, lo, hi int) *Gate {
	ctl := newLimitController(lo, hi)
	g := newGate(ctl.Limit())
	g.ctl, g.clk = ctl, clk
	return g
}

// Limit is the number of starts the gate lets in flight now. Safe for
// concurrent use.
func (g *Gate) Limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

// Idle returns a channel that is closed once the gate is idle: no start in
// flight and none waiting. It is already closed if the gate is idle now.
// Probes use it to let repeated checks yield to container starts (see
// probes.Config.StartsIdle). Safe for concurrent use; never blocks.
func (g *Gate) Idle() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idleCh
}

// Waiting is the number of starts of priority p waiting for a slot now.
// Safe for concurrent use; never blocks.
func (g *Gate) Waiting(p Priority) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters[p])
}

// busyLocked records that a slot was taken or a waiter queued.
func (g *Gate) busyLocked() {
	select {
	case <-g.idleCh:
		g.idleCh = make(chan struct{})
	default:
	}
}

// Acquire blocks until it holds a slot or ctx ends. The returned release
// gives the slot back (or hands it to the next waiter); call it exactly
// once, when the start finished: on an adaptive gate, its time counts.
func (g *Gate) Acquire(ctx context.Context, p Priority) (release func(), err error) {
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

func (g *Gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finishLocked(true)
}

// finishLocked gives a slot back; ran: a start ran in it (an adaptive gate
// learns from its finish time). Then it hands free slots to waiters.
func (g *Gate) finishLocked(ran bool) {
	g.inFlight--
	if ran && g.ctl != nil {
		g.limit = g.ctl.Observe(startSample{End: g.clk.Now(), Queued: g.anyWaiterLocked()})
	}
	g.grantLocked()
	g.idleIfLocked()
}

// grantLocked hands free slots to the first waiters of the highest
// priority.
func (g *Gate) grantLocked() {
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
func (g *Gate) idleIfLocked() {
	if g.inFlight > 0 || g.anyWaiterLocked() {
		return
	}
	select {
	case <-g.idleCh:
	default:
		close(g.idleCh)
	}
}

func (g *Gate) anyWaiterLocked() bool {
	for _, q := range g.waiters {
		if len(q) > 0 {
			return true
		}
	}
	return false
}
