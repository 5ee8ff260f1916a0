package startgate

import (
	"context"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// gateRun drives total starts, all wanted at once, through an adaptive gate
// on a fake clock: every start takes latency(n) where n is the number in
// flight when it got its slot. It returns the limit after each finish.
func gateRun(t *testing.T, total int, latency func(n int) time.Duration) []int {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := newAdaptiveGate(clk, 2, 32)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	granted := make(chan func(), total)
	for range total {
		go func() {
			r, err := g.Acquire(ctx, Sandbox)
			if err == nil {
				granted <- r
			}
		}()
	}
	// Wait until every start holds a slot or waits for one.
	for i := 0; ; i++ {
		g.mu.Lock()
		n := g.inFlight + len(g.waiters[Sandbox])
		g.mu.Unlock()
		if n == total {
			break
		}
		if i > 5000 {
			t.Fatal("starts never queued")
		}
		time.Sleep(time.Millisecond)
	}
	type op struct {
		end     time.Time
		release func()
	}
	var running []op
	take := func(k int) {
		for range k {
			r := <-granted
			running = append(running, op{end: clk.Now().Add(latency(len(running) + 1)), release: r})
		}
	}
	take(g.Limit())
	var limits []int
	for len(running) > 0 {
		i := slices.IndexFunc(running, func(o op) bool {
			return !slices.ContainsFunc(running, func(p op) bool { return p.end.Before(o.end) })
		})
		o := running[i]
		running = slices.Delete(running, i, i+1)
		clk.SetTime(o.end)
		o.release()
		g.mu.Lock()
		newly := g.inFlight - len(running)
		limits = append(limits, g.limit)
		g.mu.Unlock()
		take(newly)
	}
	return limits
}

// TestAdaptiveStartGateFollowsTheRuntime: through the gate, starts that
// wait (latency constant) raise the limit well above the minimum; starts
// that compute on 2 cores (latency proportional to the starts in flight
// beyond 2) keep it near 2 (issue 13).
func TestAdaptiveStartGateFollowsTheRuntime(t *testing.T) {
	const base = 300 * time.Millisecond
	wait := gateRun(t, 400, func(int) time.Duration { return base })
	if m := slices.Max(wait); m < 16 {
		t.Errorf("wait-bound: the limit reached only %d, want >= 16", m)
	}
	cpu := gateRun(t, 400, func(n int) time.Duration { return base * time.Duration(max(n, 2)) / 2 })
	tail := cpu[len(cpu)/2:]
	sum := 0
	for _, l := range tail {
		sum += l
	}
	if mean := float64(sum) / float64(len(tail)); mean > 4 {
		t.Errorf("cpu-bound: settled mean limit %.1f, want <= 4", mean)
	}
	if m := slices.Min(cpu); m < 2 {
		t.Errorf("cpu-bound: the limit fell to %d, want >= 2", m)
	}
}

// TestNewStartGateFlagValues: --max-parallel-starts 0 (the default) adapts
// from max(2, CPUs) up to 4*CPUs within [16, 64]; N > 0 is the upper bound
// (adaptive from min(max(2, CPUs), N)); N at or below max(2, CPUs) is a
// fixed N (issue 13).
func TestNewStartGateFlagValues(t *testing.T) {
	lo := defaultStarts()
	for _, tc := range []struct {
		n              int
		wantLimit      int
		adaptive       bool
		wantLo, wantHi int
	}{
		{n: 0, wantLimit: lo, adaptive: true, wantLo: lo, wantHi: maxAdaptiveStarts()},
		{n: -1, wantLimit: lo, adaptive: true, wantLo: lo, wantHi: maxAdaptiveStarts()},
		{n: lo + 6, wantLimit: lo, adaptive: true, wantLo: lo, wantHi: lo + 6},
		{n: lo, wantLimit: lo},
		{n: 1, wantLimit: 1},
	} {
		g := New(tc.n)
		if got := g.Limit(); got != tc.wantLimit {
			t.Errorf("New(%d): limit %d, want %d", tc.n, got, tc.wantLimit)
		}
		if got := g.ctl != nil; got != tc.adaptive {
			t.Fatalf("New(%d): adaptive %v, want %v", tc.n, got, tc.adaptive)
		}
		if tc.adaptive && (g.ctl.min != tc.wantLo || g.ctl.max != tc.wantHi) {
			t.Errorf("New(%d): adapts within [%d, %d], want [%d, %d]", tc.n, g.ctl.min, g.ctl.max, tc.wantLo, tc.wantHi)
		}
	}
	if hi := maxAdaptiveStarts(); hi < 16 || hi > 64 {
		t.Errorf("maxAdaptiveStarts() = %d, want within [16, 64]", hi)
	}
}
