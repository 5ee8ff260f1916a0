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
	// exit a moment after publishing it). Later rechecks back off: see
	// settle.
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
// returns when to list again for the rest: 0 if none remain, else the age
// of the oldest one, at least exitRecheck. So one lagging exit is rechecked
// after 20, 40, 80, ... ms (a handful of listings, not 50 a second).
//
// Why back off: every listing is all of the node's sandboxes and
// containers. When 110 pods go at once their exits arrive for a minute
// while containerd records each one late, and fixed 20 ms rechecks kept
// the relister listing everything tens of times a second: a third of
// skiff's CPU in the removal, and more of containerd's (issue 5, density).
func (q *exitQueue) settle(live map[string]bool, now time.Time) (recheck time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, at := range q.pending {
		age := now.Sub(at)
		if !live[id] || age >= exitPatience {
			delete(q.pending, id)
			continue
		}
		recheck = max(recheck, age, exitRecheck)
	}
	return recheck
}

// watchExits feeds the runtime's exit reports into q until ctx is done.
// Blocking; a no-op without an ExitWatcher.
func (l *relistLoop) watchExits(ctx context.Context, q *exitQueue) {
	if l.exits == nil {
		return
	}
	err := l.exits.WatchExits(ctx, func(id string) { q.add(id, l.clock.Now()) })
	if err != nil && ctx.Err() == nil {
		l.log.Warn("container exit reports stopped; relisting every period only", "err", err)
	}
}
