package agent

import (
	"time"
)

// Restart back-off (A.13) and image pull back-off (E.8): 10s, 20s, 40s ...
// capped at 300s, as the kubelet's flowcontrol.Backoff (no jitter). An entry is measured from an
// event time, the FinishedAt of the exit a restart follows: it is stale once
// that exit came more than twice the cap after the entry's last bump (a
// container that ran 10 minutes without a problem starts over at 10s).
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
)

type backoffEntry struct {
	delay   time.Duration
	updated time.Time
}

// backoff tracks per-key restart delays, with the semantics of client-go's
// flowcontrol.Backoff as the kubelet's doBackOff uses it. Not safe for
// concurrent use: each pod worker owns one. inBackOffSince and delay only
// read; next and prune write (the executor's and the worker's business, never
// the planner's).
type backoff struct {
	initial, max time.Duration
	entries      map[string]*backoffEntry
}

func newBackoff() *backoff {
	return &backoff{initial: backoffInitial, max: backoffMax, entries: map[string]*backoffEntry{}}
}

// newRestartBackoff is the container restart back-off capped at max (the
// kubelet's crashLoopBackOff.maxContainerRestartPeriod; 0: backoffMax),
// starting at the smaller of backoffInitial and max (newCrashLoopBackOff).
func newRestartBackoff(max time.Duration) *backoff {
	b := newBackoff()
	if max > 0 {
		b.max, b.initial = max, min(backoffInitial, max)
	}
	return b
}

// stale reports whether an entry last bumped at updated no longer applies to
// an event at ts (flowcontrol's hasExpired).
func (b *backoff) stale(ts, updated time.Time) bool { return ts.Sub(updated) > 2*b.max }

// inBackOffSince reports whether a restart of key after an exit at ts must
// still wait at now, and until when (flowcontrol's IsInBackOffSince). Pure.
func (b *backoff) inBackOffSince(key string, ts, now time.Time) (time.Time, bool) {
	e, ok := b.entries[key]
	if !ok || b.stale(ts, e.updated) {
		return time.Time{}, false
	}
	until := ts.Add(e.delay)
	return until, now.Before(until)
}

// inBackOffSinceUpdate reports whether key's delay, counted from its last
// bump, still runs at now, and until when (flowcontrol's
// IsInBackOffSinceUpdate, as the kubelet's image pull back-off uses it).
// Pure.
func (b *backoff) inBackOffSinceUpdate(key string, now time.Time) (time.Time, bool) {
	e, ok := b.entries[key]
	if !ok || b.stale(now, e.updated) {
		return time.Time{}, false
	}
	until := e.updated.Add(e.delay)
	return until, now.Before(until)
}

// delay is the current delay of key, 0 if none (flowcontrol's Get). Pure.
func (b *backoff) delay(key string) time.Duration {
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// next records a restart of key at now after an exit at ts: a new or stale
// entry starts at the initial delay, else the delay doubles up to the cap
// (flowcontrol's Next).
func (b *backoff) next(key string, ts, now time.Time) {
	e, ok := b.entries[key]
	if !ok || b.stale(ts, e.updated) {
		b.entries[key] = &backoffEntry{delay: b.initial, updated: now}
		return
	}
	e.delay = min(2*e.delay, b.max)
	e.updated = now
}

// prune forgets entries not bumped for twice the cap (flowcontrol's GC).
func (b *backoff) prune(now time.Time) {
	for k, e := range b.entries {
		if b.stale(now, e.updated) {
			delete(b.entries, k)
		}
	}
}
