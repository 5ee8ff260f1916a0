package agent

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"
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
// with a second gate (see killAll). Safe for concurrent use.
type StartGate struct {
	mu      sync.Mutex
	size    int
	free    int
	waiters [numPriorities][]chan struct{}
	// idleCh is closed while no slot is taken and nobody waits; a new one
	// is made when the gate gets busy (see idle).
	idleCh chan struct{}
}

// NewStartGate returns a gate with n slots; n <= 0 means max(2, CPUs).
func NewStartGate(n int) *StartGate {
	if n <= 0 {
		n = max(2, goruntime.NumCPU())
	}
	idle := make(chan struct{})
	close(idle)
	return &StartGate{size: max(n, 1), free: max(n, 1), idleCh: idle}
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
// gives the slot back (or hands it to the next waiter); call it exactly once.
func (g *StartGate) acquire(ctx context.Context, p startPriority) (release func(), err error) {
	g.mu.Lock()
	g.busyLocked()
	if g.free > 0 && !g.anyWaiterLocked() {
		g.free--
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
		// Granted while giving up: pass the slot on.
		g.releaseLocked()
		return nil, ctx.Err()
	}
}

func (g *StartGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

// releaseLocked hands the slot to the first waiter of the highest
// priority, or frees it.
func (g *StartGate) releaseLocked() {
	for p := range g.waiters {
		if q := g.waiters[p]; len(q) > 0 {
			g.waiters[p] = q[1:]
			close(q[0])
			return
		}
	}
	g.free++
	g.idleIfLocked()
}

// idleIfLocked closes idleCh if no slot is taken and nobody waits.
func (g *StartGate) idleIfLocked() {
	if g.free < g.size || g.anyWaiterLocked() {
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
