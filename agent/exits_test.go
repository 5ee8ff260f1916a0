package agent

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

func TestExitQueueSettle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name     string
		reported time.Time
		live     map[string]bool
		now      time.Time
		recheck  time.Duration
	}{
		{"listing shows the exit", t0, map[string]bool{"c1": false}, t0, 0},
		{"container gone from the listing", t0, map[string]bool{}, t0, 0},
		{"listing lags at once: recheck soon", t0, map[string]bool{"c1": true}, t0, exitRecheck},
		{"listing lags: recheck after the exit's age", t0, map[string]bool{"c1": true}, t0.Add(100 * time.Millisecond), 100 * time.Millisecond},
		{"lagging past patience: ticks take over", t0, map[string]bool{"c1": true}, t0.Add(exitPatience), 0},
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
			if got := q.settle(tt.live, tt.now); got != tt.recheck {
				t.Errorf("settle = %v, want %v", got, tt.recheck)
			}
			// Once settled, a pending exit never lingers.
			if tt.recheck > 0 && q.settle(map[string]bool{}, tt.now) != 0 {
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
// listing every 20 ms (issue 5).
func TestExitQueueRechecksBackOff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newExitQueue()
	q.add("old", t0)
	q.add("new", t0.Add(290*time.Millisecond))
	live := map[string]bool{"old": true, "new": true}
	if got, want := q.settle(live, t0.Add(300*time.Millisecond)), 300*time.Millisecond; got != want {
		t.Errorf("settle with an exit 300 ms old = %v, want %v", got, want)
	}
	delete(live, "old")
	if got := q.settle(live, t0.Add(310*time.Millisecond)); got != exitRecheck {
		t.Errorf("settle with only a fresh exit left = %v, want %v", got, exitRecheck)
	}
}
