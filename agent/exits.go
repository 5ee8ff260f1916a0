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
	// exit 25 to 50 ms after publishing it: it deletes the task first).
	// Later rechecks back off: see settle.
	exitRecheck = 10 * time.Millisecond
	// exitPatience is how long a reported exit is rechecked; after that the
	// ordinary relist ticks take over.
	exitPatience = time.Second
	// listingShare bounds what rechecks cost: the wait before one is at
	// least listingShare times the listing's own duration, so rechecks
	// keep the relister listing at most a tenth of the time, however many
	// pods a listing holds.
	listingShare = 10
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
// returns when to list again for the rest: 0 if none remain, else half the
// age of the oldest one, at least exitRecheck, and at least listingShare
// times took, the listing's own duration. So one lagging exit is rechecked
// about 10, 20, 30, 45, 70, 105, ... ms after its report (a handful of
// listings in the 25 to 50 ms containerd takes to record it, then fewer),
// and a node whose listing takes 5 ms is listed at most every 50 ms.
//
// Why back off: every listing is all of the node's sandboxes and
// containers. When 110 pods go at once their exits arrive for a minute
// while containerd records each one late, and fixed 20 ms rechecks kept
// the relister listing everything tens of times a second: a third of
// skiff's CPU in the removal, and more of containerd's (issue 5, density).
// Why not back off faster: each recheck interval is time an init
// container's successor waits, on average half of it (issue 35, startup:
// rechecks 20 and 45 ms after the report missed the exit by up to 20 ms).
func (q *exitQueue) settle(live map[string]bool, now time.Time, took time.Duration) (recheck time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, at := range q.pending {
		age := now.Sub(at)
		if !live[id] || age >= exitPatience {
			delete(q.pending, id)
			continue
		}
		recheck = max(recheck, age/2, exitRecheck)
	}
	if recheck > 0 {
		recheck = max(recheck, listingShare*took)
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
