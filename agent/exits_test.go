package agent

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

func TestExitQueueSettle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	tests := []struct {
		name     string
		reported time.Time
		live     map[string]bool
		now      time.Time
		took     time.Duration // the listing's duration
		recheck  time.Duration
	}{
		{"listing shows the exit", t0, map[string]bool{"c1": false}, t0, ms, 0},
		{"container gone from the listing", t0, map[string]bool{}, t0, ms, 0},
		{"listing lags at once: recheck soon", t0, map[string]bool{"c1": true}, t0, ms, exitRecheck},
		{"listing lags: recheck after half the exit's age", t0, map[string]bool{"c1": true}, t0.Add(100 * ms), ms, 50 * ms},
		{"slow listing: recheck after 10 listings' time", t0, map[string]bool{"c1": true}, t0, 5 * ms, 50 * ms},
		{"slow listing, old exit: the later of both", t0, map[string]bool{"c1": true}, t0.Add(200 * ms), 5 * ms, 100 * ms},
		{"slow listing showing the exit: no recheck", t0, map[string]bool{}, t0, 5 * ms, 0},
		{"lagging past patience: ticks take over", t0, map[string]bool{"c1": true}, t0.Add(exitPatience), ms, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newExitQueue()
			q.add("c1", tt.reported)
			select {
			case <-q.kick:
			default:
				t.Fatal("add did not ask for a relist")
			}
			if got := q.settle(tt.live, tt.now, tt.took); got != tt.recheck {
				t.Errorf("settle = %v, want %v", got, tt.recheck)
			}
			// Once settled, a pending exit never lingers.
			if tt.recheck > 0 && q.settle(map[string]bool{}, tt.now, tt.took) != 0 {
				t.Error("exit still pending after the listing showed it")
			}
		})
	}
}

// With relists and resyncs an hour apart, only the exit report can tell the
// worker that its init container finished (A.24: the app starts next).
func TestAgentStartsAppOnExitReport_A24(t *testing.T) {
	rt := newFakeRuntime()
	cfg := testConfig(t, rt)
	cfg.Exits, cfg.RelistPeriod, cfg.ResyncPeriod = rt, time.Hour, time.Hour
	h := runTestAgent(t, cfg)

	h.src.ch <- []*v1.Pod{testPod("Always", []string{"init"}, "app")}
	h.eventually("init container running", func() bool {
		c, ok := rt.ContainerByName("uid1", "init")
		return ok && c.State == runtime.ContainerRunning
	})
	c, _ := rt.ContainerByName("uid1", "init")
	rt.Exit(c.ID, 0)
	h.eventually("app container running after the exit report", func() bool {
		c, ok := rt.ContainerByName("uid1", "app")
		return ok && c.State == runtime.ContainerRunning
	})
}

// Rechecks of lagging exits back off with the oldest one's age, so a
// stream of exits (110 pods removed at once) cannot keep the relister
// listing every 10 ms (issue 5).
func TestExitQueueRechecksBackOff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newExitQueue()
	q.add("old", t0)
	q.add("new", t0.Add(290*time.Millisecond))
	live := map[string]bool{"old": true, "new": true}
	if got, want := q.settle(live, t0.Add(300*time.Millisecond), time.Millisecond), 150*time.Millisecond; got != want {
		t.Errorf("settle with an exit 300 ms old = %v, want %v", got, want)
	}
	delete(live, "old")
	if got := q.settle(live, t0.Add(310*time.Millisecond), time.Millisecond); got != exitRecheck {
		t.Errorf("settle with only a fresh exit left = %v, want %v", got, exitRecheck)
	}
}

// One exit the runtime never shows: the rechecks come every 10 ms while it
// is young (containerd records an exit 25 to 50 ms after reporting it:
// issue 35, startup), then back off; over the whole patience they stay a
// handful (issue 5), and fewer still where a listing is slow.
func TestExitQueueRecheckSchedule(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name       string
		took       time.Duration
		firstAges  []time.Duration // the first listings' ages of the exit
		maxListing int             // listings within exitPatience, at most
	}{
		{"fast listings (one pod)", ms, []time.Duration{ms, 11 * ms, 21 * ms, 31500 * time.Microsecond, 47250 * time.Microsecond}, 13},
		{"slow listings (110 pods)", 5 * ms, []time.Duration{ms, 51 * ms, 101 * ms, 151500 * time.Microsecond, 227250 * time.Microsecond}, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			q := newExitQueue()
			q.add("c1", t0)
			live := map[string]bool{"c1": true}
			now := t0.Add(ms) // the listing the report kicked
			var ages []time.Duration
			for {
				ages = append(ages, now.Sub(t0))
				d := q.settle(live, now, tt.took)
				if d == 0 {
					break
				}
				now = now.Add(d)
			}
			for i, want := range tt.firstAges {
				if i >= len(ages) || ages[i] != want {
					t.Fatalf("listings at ages %v, want them to begin %v", ages, tt.firstAges)
				}
			}
			if len(ages) > tt.maxListing {
				t.Errorf("%d listings within the patience (%v), want at most %d", len(ages), ages, tt.maxListing)
			}
		})
	}
}
