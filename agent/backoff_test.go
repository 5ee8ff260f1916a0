package agent

import (
	"fmt"
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// Planning is pure: it reads the back-off, never changes it, even where an
// entry is stale (the worker prunes, the executor bumps).
func TestPlanningLeavesBackoffUnchanged(t *testing.T) {
	pod := testPod("Always", nil, "a", "b")
	bo := newBackoff()
	bo.next(restartBackoffKey(&v1.Container{Name: "a", Image: "img"}), t0, t0)                               // stale at now
	bo.next(restartBackoffKey(&v1.Container{Name: "b", Image: "img"}), t0.Add(time.Hour), t0.Add(time.Hour)) // live
	before := map[string]backoffEntry{}
	for k, e := range bo.entries {
		before[k] = *e
	}
	now := t0.Add(time.Hour + 5*time.Second)
	st := state(sandboxReady(0), exited("a", 0, 1, now), exited("b", 1, 1, now))
	computePodActions(pod, st, now, bo, planExtras{})
	after := map[string]backoffEntry{}
	for k, e := range bo.entries {
		after[k] = *e
	}
	if !maps.Equal(before, after) {
		t.Fatalf("planning changed the back-off: %v -> %v", before, after)
	}
	bo.prune(now)
	if _, ok := bo.entries[restartBackoffKey(&v1.Container{Name: "a", Image: "img"})]; ok {
		t.Errorf("prune kept the stale entry")
	}
	if _, ok := bo.entries[restartBackoffKey(&v1.Container{Name: "b", Image: "img"})]; !ok {
		t.Errorf("prune dropped the live entry")
	}
}

// A container killed for a failed liveness probe is restarted as in the
// kubelet, whose doBackOff measures the back-off from the latest exit in the
// pod status taken before the sync's kills, so from the instance before the
// killed one. The timeline is the one measured with kubelet v1.34.4 for a
// container failing its liveness probe 5s after each start (period 1s,
// failureThreshold 2): restarts at about 9, 19, 41 and 50s, back-off holding
// only the third and fifth (A.13, B.9).
func TestLivenessKillBackoffTimeline_A13_B9(t *testing.T) {
	pod := testPod("Always", nil, "a")
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	steps := []struct {
		kill float64 // the running instance is killed for its probe, exits then
		plan float64 // the worker plans at
		// restart: the planner restarts it; else it waits in back-off
		restart bool
		// requeue: when it looks again (a wait only)
		requeue float64
	}{
		{kill: 8, plan: 8.5, restart: true},    // first kill: no earlier exit, no check
		{kill: 17.5, plan: 18, restart: true},  // measured from 8: no entry yet -> 10s
		{kill: 27, plan: 27.2, restart: false}, // from 17.5: 9.7s < 10s
		{plan: 30, restart: false, requeue: 7}, // now from its own exit 27 -> 37
		{plan: 41, restart: true},              // 27+10 passed -> 20s
		{kill: 49, plan: 49.5, restart: true},  // from 27: 22.5s >= 20s -> 40s
		{kill: 58, plan: 58.5, restart: false}, // from 49: 9.5s < 40s
	}
	bo := newBackoff()
	marks, checked := map[string]bool{}, map[string]bool{}
	insts := []*runtime.ContainerStatus{running("a", 0)}
	restarts := 0
	for i, s := range steps {
		cur := insts[len(insts)-1]
		if s.kill > 0 {
			if cur.State != runtime.ContainerRunning {
				t.Fatalf("step %d: kill of a container not running", i)
			}
			cur.State, cur.ExitCode, cur.FinishedAt = runtime.ContainerExited, 0, at(s.kill)
			marks[cur.ID] = true // the worker's markProbeKilled
		}
		now := at(s.plan)
		st := state(sandboxReady(0), insts...)
		x := planExtras{RestartAnyway: maps.Clone(marks), KillChecked: maps.Clone(checked)}
		a := computePodActions(pod, st, now, bo, x)
		for _, id := range a.CheckedKills {
			checked[id] = true
		}
		started := len(a.StartApp) == 1
		if started != s.restart {
			t.Fatalf("step %d at %gs: restart %t, want %t (waiting %v)", i, s.plan, started, s.restart, a.Waiting)
		}
		if !started {
			if ws := a.Waiting["a"]; ws.Reason != "CrashLoopBackOff" {
				t.Fatalf("step %d: waiting %+v, want CrashLoopBackOff", i, ws)
			}
			if s.requeue > 0 && a.RequeueAfter != time.Duration(s.requeue*float64(time.Second)) {
				t.Errorf("step %d: requeue after %s, want %gs", i, a.RequeueAfter, s.requeue)
			}
			continue
		}
		// The executor starts it and records the restart.
		if from, ok := a.BackoffFrom["a"]; ok {
			bo.next(restartBackoffKey(&v1.Container{Name: "a", Image: "img"}), from, now)
		}
		restarts++
		next := running("a", uint32(restarts))
		next.ID = fmt.Sprintf("a-%d", restarts)
		next.CreatedAt, next.StartedAt = now.Add(time.Duration(restarts)), now
		insts = append(insts, next)
	}
	if restarts != 4 {
		t.Errorf("%d restarts, want 4 as the kubelet", restarts)
	}
}

// A container that exits by itself is measured from its own exit, as in the
// kubelet, even right after a probe kill of an older instance.
func TestCrashAfterProbeKillMeasuresOwnExit_A13(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	bo := newBackoff()
	bo.next(restartBackoffKey(&v1.Container{Name: "a", Image: "img"}), t0, t0.Add(time.Second)) // 10s
	old := exited("a", 0, 0, t0)
	crashed := exited("a", 1, 1, t0.Add(20*time.Second))
	crashed.ID, crashed.CreatedAt = "a-1", t0.Add(time.Second)
	st := state(sandboxReady(0), old, crashed)
	x := planExtras{RestartAnyway: map[string]bool{old.ID: true}}
	a := computePodActions(pod, st, t0.Add(25*time.Second), bo, x)
	if len(a.StartApp) != 0 || a.Waiting["a"].Reason != "CrashLoopBackOff" || a.RequeueAfter != 5*time.Second {
		t.Fatalf("StartApp %v waiting %v requeue %s, want CrashLoopBackOff for 5s more", a.StartApp, a.Waiting, a.RequeueAfter)
	}
}

// TestRestartBackoffMax: crashLoopBackOff.maxContainerRestartPeriod caps
// the restart delays, and starts them there when below 10s
// (newCrashLoopBackOff); the image pull back-off keeps its own cap.
func TestRestartBackoffMax(t *testing.T) {
	for _, tc := range []struct {
		max  time.Duration
		want []time.Duration
	}{
		{0, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second}},
		{time.Minute, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}},
		{5 * time.Second, []time.Duration{5 * time.Second, 5 * time.Second}},
	} {
		b := newRestartBackoff(tc.max)
		now := t0
		for i, want := range tc.want {
			b.next("restart/a/h", now, now)
			if got := b.delay("restart/a/h"); got != want {
				t.Errorf("max %s: delay %d = %s, want %s", tc.max, i, got, want)
			}
			now = now.Add(time.Second)
		}
	}
}
