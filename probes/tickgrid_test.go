package probes

import (
	"testing"
	"time"
)

func TestUntilGrid(t *testing.T) {
	base := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		grid time.Duration
		want time.Duration
	}{
		{"on the grid", base, time.Second, 0},
		{"just past", base.Add(time.Nanosecond), time.Second, time.Second - time.Nanosecond},
		{"mid-second", base.Add(300 * time.Millisecond), time.Second, 700 * time.Millisecond},
		{"coarser grid", base.Add(2500 * time.Millisecond), 10 * time.Second, 7500 * time.Millisecond},
	} {
		if got := untilGrid(tc.now, tc.grid); got != tc.want {
			t.Errorf("%s: untilGrid(%v, %v) = %v, want %v", tc.name, tc.now.Format(time.StampMilli), tc.grid, got, tc.want)
		}
	}
}

// With Config.TickGrid, a container started off the grid is probed at
// once, and then period after the next grid instant: probes of the same
// period fire in the same tick whatever their containers' start times.
func TestTickGridAlignsRoundsAfterTheFirst(t *testing.T) {
	h := newHarness(t, harnessOpts{tickGrid: time.Second})
	h.exec.set("ready", pass)
	h.clock.SetTime(t0.Add(300 * time.Millisecond)) // t0 is on the grid
	h.add(appPod("a", nil, execProbe("ready", 0, 10, 1, 3), nil), "c1")
	h.round(Readiness) // the first round does not wait for the grid
	h.waitForClock()   // the wait for the grid
	h.clock.Step(700 * time.Millisecond)
	h.noRound(Readiness)
	h.waitForClock() // the ticker, started on the grid
	h.clock.Step(10*time.Second - time.Millisecond)
	h.noRound(Readiness)
	h.tick(time.Millisecond, Readiness) // t0 + 11 s, not t0 + 10.3 s
	h.tick(10*time.Second, Readiness)
	if n := h.exec.count("ready"); n != 3 {
		t.Errorf("%d probes, want 3", n)
	}
}
