package filepages

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Timing of both long-running processes (the agent, skiff-apiserver):
// After is when start-up is over (package initialisation, the API's
// installation or the pods' recovery, the first requests), Every how
// often the pages a burst of work touched stop counting in the resident
// set (decisions 119, 120).
const (
	After = 10 * time.Second
	Every = 30 * time.Second
)

// Periodically calls Release first after it starts, evicting the
// executable from the page cache that time (start-up is over by then), and
// then every period, so that what a burst of work touched stops counting
// once the burst is over. report, when not nil, gets each call's result
// (a failure changes nothing else). It returns when ctx ends.
func Periodically(ctx context.Context, first, period time.Duration, report func(released uint64, err error)) {
	periodically(ctx, clock.RealClock{}, first, period, Release, report)
}

// periodically is Periodically with its clock and release injected.
func periodically(ctx context.Context, clk clock.Clock, first, period time.Duration, release func(evict bool) (uint64, error), report func(uint64, error)) {
	evict := true
	t := clk.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		n, err := release(evict)
		evict = false
		if report != nil {
			report(n, err)
		}
		t.Reset(period)
	}
}
