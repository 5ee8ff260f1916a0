package startgate

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestLimitControllerSettlesOnSimulatedRuntimes: on a CPU-bound runtime
// (throughput flat beyond the cores) the limit settles near the core count;
// on a runtime whose starts wait it climbs well above it; noise never takes
// it under the minimum (issue 13).
func TestLimitControllerSettlesOnSimulatedRuntimes(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		parallel, contention float64
		lo, hi               int
		// The settled mean limit must lie in [wantLo, wantHi].
		wantLo, wantHi float64
	}{
		{name: "cpu-bound 2 cores", parallel: 2, lo: 2, hi: 32, wantLo: 2, wantHi: 4},
		{name: "cpu-bound 2 cores, contention", parallel: 2, contention: 0.02, lo: 2, hi: 32, wantLo: 2, wantHi: 3.5},
		{name: "cpu-bound 8 cores, contention", parallel: 8, contention: 0.02, lo: 2, hi: 64, wantLo: 6, wantHi: 12},
		{name: "wait-bound", parallel: 64, lo: 2, hi: 32, wantLo: 20, wantHi: 32},
		{name: "wait-bound up to 12", parallel: 12, lo: 2, hi: 32, wantLo: 9, wantHi: 18},
	} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/seed%d", tc.name, seed), func(t *testing.T) {
				ctl := newLimitController(tc.lo, tc.hi)
				rt := simRuntime{parallel: tc.parallel, contention: tc.contention, work: 200 * time.Millisecond, seed: seed}
				res := rt.run(3000, ctl, 0)
				if m := res.meanLimit(); m < tc.wantLo || m > tc.wantHi {
					t.Errorf("settled mean limit %.1f, want in [%v, %v]", m, tc.wantLo, tc.wantHi)
				}
				if lo, hi := slices.Min(res.limits), slices.Max(res.limits); lo < tc.lo || hi > tc.hi {
					t.Errorf("limit went to [%d, %d], outside [%d, %d]", lo, hi, tc.lo, tc.hi)
				}
			})
		}
	}
}

// TestLimitControllerBurstNoSlowerThanFixed: a 110-pod burst (a sandbox
// and a container each) through the adaptive limit takes no longer than
// through today's fixed max(2, CPUs) on a CPU-bound runtime, and much less
// where starts wait (issue 13: 146 s fixed, 71 s with 8 on an external
// containerd).
func TestLimitControllerBurstNoSlowerThanFixed(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		parallel, contention float64
		pods                 bool
		// maxRatio bounds adaptive/fixed elapsed time.
		maxRatio float64
	}{
		{name: "cpu-bound 2 cores", parallel: 2, maxRatio: 1.05},
		{name: "cpu-bound 2 cores, contention", parallel: 2, contention: 0.05, maxRatio: 1.05},
		{name: "cpu-bound 2 cores, contention, pods", parallel: 2, contention: 0.05, pods: true, maxRatio: 1.08},
		{name: "wait-bound, pods", parallel: 64, pods: true, maxRatio: 0.65},
		{name: "wait-bound", parallel: 64, maxRatio: 0.5},
	} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/seed%d", tc.name, seed), func(t *testing.T) {
				rt := simRuntime{parallel: tc.parallel, contention: tc.contention, work: 300 * time.Millisecond, seed: seed}
				if tc.pods { // sandboxes take 3 times as long as containers
					rt.work, rt.sandboxWork = 150*time.Millisecond, 450*time.Millisecond
					rt.pods = true
				}
				fixed := rt.run(220, nil, 2).elapsed
				adaptive := rt.run(220, newLimitController(2, 32), 0).elapsed
				if r := adaptive.Seconds() / fixed.Seconds(); r > tc.maxRatio {
					t.Errorf("adaptive %v, fixed 2 %v: ratio %.2f, want <= %v", adaptive, fixed, r, tc.maxRatio)
				}
			})
		}
	}
}

// feedLimit feeds ctl n finished starts, spaced as a runtime whose
// throughput at limit l is rate(l) starts/s would finish them, all with
// others waiting when queued; it returns the limit after each.
func feedLimit(ctl *limitController, now *time.Time, n int, queued bool, rate func(l int) float64) []int {
	var limits []int
	for range n {
		*now = now.Add(time.Duration(float64(time.Second) / rate(ctl.Limit())))
		limits = append(limits, ctl.Observe(startSample{End: *now, Queued: queued}))
	}
	return limits
}

// TestLimitControllerTable: noise-free runtimes whose throughput is a
// function of the limit; the controller must end in the wanted range and
// never leave [lo, hi] (issue 13).
func TestLimitControllerTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi int
		rate   func(l int) float64
		queued bool
		// The limits over the last half of the samples lie in [wantLo, wantHi].
		wantLo, wantHi int
	}{
		{name: "linear climbs to the maximum", lo: 2, hi: 32, queued: true,
			rate: func(l int) float64 { return float64(l) }, wantLo: 24, wantHi: 32},
		{name: "flat stays at the minimum", lo: 2, hi: 32, queued: true,
			rate: func(int) float64 { return 10 }, wantLo: 2, wantHi: 3},
		{name: "knee at 8", lo: 2, hi: 32, queued: true,
			rate: func(l int) float64 { return float64(min(l, 8)) }, wantLo: 6, wantHi: 10},
		{name: "falling beyond 4", lo: 2, hi: 32, queued: true,
			rate: func(l int) float64 { return min(float64(l), 4-0.2*float64(l-4)) }, wantLo: 3, wantHi: 5},
		{name: "minimum above 1 holds under collapse", lo: 2, hi: 8, queued: true,
			rate: func(l int) float64 { return 10 / float64(l) }, wantLo: 2, wantHi: 3},
		{name: "knee just above a high minimum", lo: 10, hi: 32, queued: true,
			rate: func(l int) float64 { return float64(min(l, 12)) }, wantLo: 10, wantHi: 15},
		{name: "demand below the limit learns nothing", lo: 2, hi: 32, queued: false,
			rate: func(l int) float64 { return float64(l) }, wantLo: 2, wantHi: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newLimitController(tc.lo, tc.hi)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			limits := feedLimit(ctl, &now, 2000, tc.queued, tc.rate)
			tail := limits[len(limits)/2:]
			if lo, hi := slices.Min(tail), slices.Max(tail); lo < tc.wantLo || hi > tc.wantHi {
				t.Errorf("settled limits in [%d, %d], want within [%d, %d]", lo, hi, tc.wantLo, tc.wantHi)
			}
			if lo, hi := slices.Min(limits), slices.Max(limits); lo < tc.lo || hi > tc.hi {
				t.Errorf("limits in [%d, %d], outside [%d, %d]", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

// TestLimitControllerIgnoresIdleTime: the gap between two bursts does not
// count as low throughput: after an hour without starts the controller
// decides exactly as it would have without the hour (issue 13).
func TestLimitControllerIgnoresIdleTime(t *testing.T) {
	knee := func(l int) float64 { return float64(min(l, 8)) }
	// The burst ends after 1000..1040 starts: in every phase of a window.
	for extra := range 40 {
		ctl := newLimitController(2, 32)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		feedLimit(ctl, &now, 1000+extra, true, knee)
		feedLimit(ctl, &now, 1, false, knee) // the burst ends: nobody waits
		twin, twinNow := *ctl, now
		now = now.Add(time.Hour)
		after := feedLimit(ctl, &now, 500, true, knee)
		want := feedLimit(&twin, &twinNow, 500, true, knee)
		if !slices.Equal(after, want) {
			t.Fatalf("burst of %d: limits after an idle hour\n%v\nwant (no idle hour)\n%v", 1000+extra, after, want)
		}
	}
}

// TestLimitControllerProbesBackOff: where no other limit is better, probes
// (each a window off the best limit) become rarer: on a flat runtime at
// most a quarter of the settled completions run above the minimum
// (issue 13: every probe costs a CPU-bound runtime throughput).
func TestLimitControllerProbesBackOff(t *testing.T) {
	ctl := newLimitController(2, 32)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limits := feedLimit(ctl, &now, 4000, true, func(int) float64 { return 10 })
	above := 0
	for _, l := range limits[len(limits)/2:] {
		if l > 2 {
			above++
		}
	}
	if share := float64(above) / float64(len(limits)/2); share > 0.25 {
		t.Errorf("%.0f%% of the settled completions ran above the minimum, want <= 25%%", 100*share)
	}
}

// TestLimitControllerSkipsWarmup: after a limit change, the completions of
// starts admitted under the old limit (here: a quick run of them) do not
// count as the new limit's throughput, so a doubling that does not pay is
// not kept (issue 13).
func TestLimitControllerSkipsWarmup(t *testing.T) {
	ctl := newLimitController(2, 32)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	flat := func(int) float64 { return 10 }
	feedLimit(ctl, &now, 1+limitMinWindow, true, flat) // window at 2: doubles
	if ctl.Limit() != 4 {
		t.Fatalf("limit %d after the first window, want 4", ctl.Limit())
	}
	// The old starts finish together, then the rate stays flat.
	feedLimit(ctl, &now, 4, true, func(int) float64 { return 1000 })
	limits := feedLimit(ctl, &now, limitMinWindow, true, flat)
	if got := limits[len(limits)-1]; got > 4 {
		t.Errorf("limit %d after a flat window at 4, want the doubling undone", got)
	}
}
