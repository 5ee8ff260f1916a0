// Package clocktest is a fake clock for tests that must show that nothing
// happens before a period ends, without sleeping: k8s.io/utils' FakeClock,
// which also tells when the waits it handed out (timers, tickers, After,
// AfterFunc) are due. A FakeClock fires a wait only when a Step or SetTime
// reaches it, so a test that reads NextDue before stepping knows, without
// waiting for a goroutine to (not) react, that a shorter step fires
// nothing.
package clocktest

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// Clock is a clocktesting.FakeClock that records its waits. It implements
// clock.WithTicker and clock.WithDelayedExecution; safe for concurrent use.
type Clock struct {
	*clocktesting.FakeClock
	mu    sync.Mutex
	waits []*wait
}

// wait is one handed-out wait: due is when it fires next (a ticker's
// first tick), every its period (0: fires once).
type wait struct {
	due     time.Time
	every   time.Duration
	stopped bool
}

// New returns a Clock at t.
func New(t time.Time) *Clock {
	return &Clock{FakeClock: clocktesting.NewFakeClock(t)}
}

func (c *Clock) add(d, every time.Duration) *wait {
	w := &wait{due: c.Now().Add(d), every: every}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, w)
	return w
}

// After implements clock.Clock.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.add(d, 0)
	return c.FakeClock.After(d)
}

// NewTimer implements clock.Clock.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	return &timer{Timer: c.FakeClock.NewTimer(d), c: c, w: c.add(d, 0)}
}

// AfterFunc implements clock.WithDelayedExecution.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return &timer{Timer: c.FakeClock.AfterFunc(d, f), c: c, w: c.add(d, 0)}
}

// Tick implements clock.Clock.
func (c *Clock) Tick(d time.Duration) <-chan time.Time {
	c.add(d, d)
	return c.FakeClock.Tick(d)
}

// NewTicker implements clock.WithTicker.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	return &ticker{Ticker: c.FakeClock.NewTicker(d), c: c, w: c.add(d, d)}
}

// NextDue returns when the earliest pending wait fires next; ok is false
// when none is pending (all fired or stopped).
func (c *Clock) NextDue() (due time.Time, ok bool) {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waits {
		next := w.due
		if w.stopped || (w.every == 0 && !next.After(now)) {
			continue
		}
		for !next.After(now) {
			next = next.Add(w.every)
		}
		if !ok || next.Before(due) {
			due, ok = next, true
		}
	}
	return due, ok
}

// NextIn is NextDue less the clock's time: how far a Step may go without
// firing anything (0, false: nothing pending).
func (c *Clock) NextIn() (time.Duration, bool) {
	due, ok := c.NextDue()
	if !ok {
		return 0, false
	}
	return due.Sub(c.Now()), true
}

type timer struct {
	clock.Timer
	c *Clock
	w *wait
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	t.w.stopped = true
	t.c.mu.Unlock()
	return t.Timer.Stop()
}

func (t *timer) Reset(d time.Duration) bool {
	due := t.c.Now().Add(d)
	t.c.mu.Lock()
	t.w.due, t.w.stopped = due, false
	t.c.mu.Unlock()
	return t.Timer.Reset(d)
}

type ticker struct {
	clock.Ticker
	c *Clock
	w *wait
}

func (t *ticker) Stop() {
	t.c.mu.Lock()
	t.w.stopped = true
	t.c.mu.Unlock()
	t.Ticker.Stop()
}
