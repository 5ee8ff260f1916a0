package agent

import (
	"time"
)

// Restart back-off (A.13): 10s, 20s, 40s ... capped at 300s; an entry that
// has not been bumped for twice the cap is forgotten, which resets a container
// that ran 10 minutes without a problem.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
)

type backoffEntry struct {
	delay   time.Duration
	updated time.Time
}

// backoff tracks per-key restart delays. Not safe for concurrent use: each
// pod worker owns one.
type backoff struct {
	initial, max time.Duration
	entries      map[string]*backoffEntry
}

func newBackoff() *backoff {
	return &backoff{initial: backoffInitial, max: backoffMax, entries: map[string]*backoffEntry{}}
}

func (b *backoff) live(key string, now time.Time) *backoffEntry {
	e, ok := b.entries[key]
	if !ok {
		return nil
	}
	if now.Sub(e.updated) > 2*b.max {
		delete(b.entries, key)
		return nil
	}
	return e
}

// until reports when key may be restarted after a failure at finished; a
// zero time means now. Like the kubelet, the first failure restarts at once.
func (b *backoff) until(key string, finished, now time.Time) time.Time {
	e := b.live(key, now)
	if e == nil {
		return time.Time{}
	}
	if t := finished.Add(e.delay); now.Before(t) {
		return t
	}
	return time.Time{}
}

// delay is the current delay of key (0 if none).
func (b *backoff) delay(key string, now time.Time) time.Duration {
	if e := b.live(key, now); e != nil {
		return e.delay
	}
	return 0
}

// next records a restart of key at now and doubles its delay.
func (b *backoff) next(key string, now time.Time) {
	e := b.live(key, now)
	if e == nil {
		b.entries[key] = &backoffEntry{delay: b.initial, updated: now}
		return
	}
	e.delay = min(2*e.delay, b.max)
	e.updated = now
}
