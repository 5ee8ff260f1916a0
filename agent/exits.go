package agent

import (
	"context"
	"sync"
	"time"
)

// Exit reports let the relister see a container exit at once instead of at
// its next tick (on average half a RelistPeriod later): that wait sat between
// every init container's exit and the next container's start. The report is
// only a hint to relist now: the runtime's listing stays the truth, so a lost
// or spurious report changes nothing but timing.
const (
	// exitRecheck is how soon the runtime is listed again while a reported
	// exit does not show in its listing yet (containerd's CRI records an
	// exit a moment after publishing it).
	exitRecheck = 20 * time.Millisecond
	// exitPatience is how long a reported exit is rechecked; after that the
	// ordinary relist ticks take over.
	exitPatience = time.Second
)

// exitQueue holds the exits reported but not yet seen in a listing.
// Safe for concurrent use.
type exitQueue struct {
	mu      sync.Mutex
	pending map[string]time.Time // ID -> when reported
	kick    chan struct{}
}

func newExitQueue() *exitQueue {
	return &exitQueue{pending: map[string]time.Time{}, kick: make(chan struct{}, 1)}
}

// add records the exit of id at now and asks for a relist. Non-blocking.
func (q *exitQueue) add(id string, now time.Time) {
	q.mu.Lock()
	q.pending[id] = now
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// settle forgets the exits that a listing taken at now shows (the ID is no
// longer live) or that were reported longer than exitPatience ago, and
// reports whether any remain to be rechecked.
func (q *exitQueue) settle(live map[string]bool, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, at := range q.pending {
		if !live[id] || now.Sub(at) >= exitPatience {
			delete(q.pending, id)
		}
	}
	return len(q.pending) > 0
}

// watchExits feeds the runtime's exit reports into q until ctx is done.
// Blocking; a no-op without an ExitWatcher.
func (a *Agent) watchExits(ctx context.Context, q *exitQueue) {
	if a.cfg.Exits == nil {
		return
	}
	err := a.cfg.Exits.WatchExits(ctx, func(id string) { q.add(id, a.clock.Now()) })
	if err != nil && ctx.Err() == nil {
		a.log.Warn("container exit reports stopped; relisting every period only", "err", err)
	}
}
