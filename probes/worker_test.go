package probes

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestTimingOf_B13_B15_Defaults(t *testing.T) {
	tests := []struct {
		name string
		p    v1.Probe
		want timing
	}{
		{"zero fields get the defaults", v1.Probe{}, timing{0, 10 * time.Second, time.Second, 1, 3}},
		{"negative fields get the defaults", v1.Probe{InitialDelaySeconds: -1, PeriodSeconds: -1, TimeoutSeconds: -1, SuccessThreshold: -1, FailureThreshold: -1},
			timing{0, 10 * time.Second, time.Second, 1, 3}},
		{"set fields are kept", v1.Probe{InitialDelaySeconds: 4, PeriodSeconds: 2, TimeoutSeconds: 5, SuccessThreshold: 6, FailureThreshold: 7},
			timing{4 * time.Second, 2 * time.Second, 5 * time.Second, 6, 7}},
	}
	for _, tc := range tests {
		if got := timingOf(&tc.p); got != tc.want {
			t.Errorf("%s: timingOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestWorker_B13_PeriodSeconds(t *testing.T) {
	for _, tc := range []struct {
		period int32
		want   time.Duration
	}{{3, 3 * time.Second}, {0, DefaultPeriod}} {
		h := newHarness(t, harnessOpts{})
		h.exec.set("ready", pass)
		h.add(appPod("p1", nil, execProbe("ready", 0, tc.period, 1, 3), nil), "c1")
		h.round(Readiness) // the first round runs at once
		h.clock.Step(tc.want - time.Millisecond)
		h.noRound(Readiness)
		h.tick(time.Millisecond, Readiness)
		h.tick(tc.want, Readiness)
		if n := h.exec.count("ready"); n != 3 {
			t.Errorf("period %d: %d probes after two periods, want 3", tc.period, n)
		}
	}
}

func TestWorker_B14_InitialDelay(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("ready", pass)
	h.exec.set("live", fail)
	pod := appPod("p1", nil, execProbe("ready", 12, 5, 1, 1), execProbe("live", 12, 5, 1, 1))
	h.add(pod, "c1")
	h.round(Readiness, Liveness)               // t=0
	h.tick(5*time.Second, Readiness, Liveness) // t=5
	h.tick(5*time.Second, Readiness, Liveness) // t=10
	if n, m := h.exec.count("ready"), h.exec.count("live"); n+m != 0 {
		t.Fatalf("probes ran before initialDelaySeconds: ready %d, live %d", n, m)
	}
	// B.10: readiness is Failure before the initial delay; liveness Success.
	if h.m.Ready("p1", "app") || h.result("p1", Readiness) != Failure {
		t.Errorf("ready before the initial delay")
	}
	if failed, _ := h.m.LivenessFailed("p1", "app"); failed || h.result("p1", Liveness) != Success {
		t.Errorf("liveness failed before the initial delay")
	}
	h.round(Readiness)                         // Ready's poke: still before the delay
	h.tick(5*time.Second, Readiness, Liveness) // t=15
	if n, m := h.exec.count("ready"), h.exec.count("live"); n != 1 || m != 1 {
		t.Errorf("after initialDelaySeconds: ready %d, live %d probes, want 1 and 1", n, m)
	}
}

func TestWorker_B14_InitialDelayCountsFromStart(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("live", pass)
	pod := appPod("p1", nil, nil, execProbe("live", 15, 5, 1, 1))
	h.addStartedAt(pod, "c1", h.clock.Now().Add(-20*time.Second))
	h.round(Liveness)
	if n := h.exec.count("live"); n != 1 {
		t.Errorf("container started 20s ago with a 15s delay: %d probes, want 1", n)
	}
}

func TestWorker_B15_TimeoutSeconds(t *testing.T) {
	for _, tc := range []struct {
		seconds int32
		want    time.Duration
	}{{7, 7 * time.Second}, {0, DefaultTimeout}} {
		h := newHarness(t, harnessOpts{})
		h.exec.set("live", pass)
		p := execProbe("live", 0, 10, 1, 3)
		p.TimeoutSeconds = tc.seconds
		h.add(appPod("p1", nil, nil, p), "c1")
		h.round(Liveness)
		if h.exec.timeout != tc.want || h.exec.lastID != "c1" {
			t.Errorf("timeoutSeconds %d: exec in %q with timeout %v, want c1 and %v", tc.seconds, h.exec.lastID, h.exec.timeout, tc.want)
		}
	}
}

// TestWorker_B10_B19_ReadinessThresholds feeds a readiness probe with
// successThreshold 2 and failureThreshold 3 a sequence of outcomes.
func TestWorker_B10_B19_ReadinessThresholds(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	steps := []struct {
		reply execReply
		want  Result
	}{
		{pass, Failure}, // initial Failure; 1 success < 2
		{pass, Success}, // 2 in a row
		{fail, Success},
		{fail, Success},
		{fail, Failure}, // 3 failures in a row: un-ready (B.19)
		{pass, Failure},
		{fail, Failure}, // a failure resets the success run
		{pass, Failure},
		{pass, Success}, // ready again
		{execReply{err: errors.New("down")}, Success}, // an error is thrown away
	}
	h.exec.set("ready", steps[0].reply) // the first round runs at once
	h.add(appPod("p1", nil, execProbe("ready", 0, 1, 2, 3), nil), "c1")
	for i, s := range steps {
		h.exec.set("ready", s.reply)
		if i == 0 {
			h.round(Readiness)
		} else {
			h.tick(time.Second, Readiness)
		}
		if got := h.result("p1", Readiness); got != s.want {
			t.Fatalf("round %d: result %v, want %v", i+1, got, s.want)
		}
	}
	// Changes only on changes: Failure->Success->Failure->Success.
	if n := h.changeCount(); n != 3 {
		t.Errorf("Changes sent %d times, want 3", n)
	}
	var failed int
	for _, e := range h.events.all() {
		if e == "Unhealthy: Readiness probe failed: boom" {
			failed++
		}
	}
	if failed != 4 {
		t.Errorf("%d Readiness probe failed events, want one per failed round (4): %q", failed, h.events.all())
	}
}

func TestWorker_B9_LivenessFailure(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("live", fail) // the first round runs at once
	h.add(appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 3)), "c1")
	for i, r := range []execReply{fail, fail, pass, fail, fail} {
		h.exec.set("live", r)
		if i == 0 {
			h.round(Liveness)
		} else {
			h.tick(10*time.Second, Liveness)
		}
		if failed, _ := h.m.LivenessFailed("p1", "app"); failed {
			t.Fatalf("round %d: liveness failed below failureThreshold (a success resets the count)", i+1)
		}
	}
	if n := h.changeCount(); n != 0 {
		t.Errorf("Changes sent %d times without a change", n)
	}
	w := h.worker("p1", Liveness)
	h.tick(10*time.Second, Liveness) // third failure in a row
	failed, msg := h.m.LivenessFailed("p1", "app")
	if !failed || msg != "Container app failed liveness probe" {
		t.Errorf("LivenessFailed = %v, %q; want true, %q", failed, msg, "Container app failed liveness probe")
	}
	if n := h.changeCount(); n != 1 {
		t.Errorf("Changes sent %d times, want 1", n)
	}
	want := "Unhealthy: Liveness probe failed: boom"
	if ev := h.events.all(); len(ev) != 5 || ev[4] != want {
		t.Errorf("events = %q, want 5 × %q", ev, want)
	}
	// On hold: the worker ends and the container is not probed again.
	waitClosed(t, w.done, "liveness worker after failure")
	n := h.exec.count("live")
	h.clock.Step(time.Minute)
	h.noRound(Liveness)
	if h.exec.count("live") != n {
		t.Errorf("liveness probed after its failure verdict")
	}
}

func TestWorker_B8_ErrorsDoNotCount(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	errDown := execReply{err: errors.New("runtime down")}
	h.exec.set("live", fail) // the first round runs at once
	h.add(appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 2)), "c1")
	for i, r := range []execReply{fail, errDown, errDown} {
		h.exec.set("live", r)
		if i == 0 {
			h.round(Liveness)
		} else {
			h.tick(10*time.Second, Liveness)
		}
	}
	if failed, _ := h.m.LivenessFailed("p1", "app"); failed {
		t.Fatal("errors counted as failures")
	}
	want := "Unhealthy: Liveness probe errored and resulted in unknown state: exec probe in container c1: runtime down"
	if ev := h.events.all(); len(ev) != 3 || ev[1] != want || ev[2] != want {
		t.Errorf("events = %q, want a failure then 2 × %q", ev, want)
	}
	h.exec.set("live", fail)
	h.tick(10*time.Second, Liveness) // second failure in a row: errors did not reset the run
	if failed, _ := h.m.LivenessFailed("p1", "app"); !failed {
		t.Error("liveness not failed after failureThreshold failures separated by errors")
	}
}

func TestWorker_B11_StartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("start", fail)
	h.exec.set("live", pass)
	h.exec.set("ready", pass)
	// Startup every 2s, the others every 3s: their ticks never coincide
	// before t=6, so the order of rounds is known.
	pod := appPod("p1", execProbe("start", 0, 2, 1, 10), execProbe("ready", 0, 3, 1, 3), execProbe("live", 0, 3, 1, 3))
	h.add(pod, "c1")
	h.round(Startup, Readiness, Liveness)    // t=0
	h.tick(2*time.Second, Startup)           // t=2
	h.tick(time.Second, Readiness, Liveness) // t=3
	if n, m := h.exec.count("live"), h.exec.count("ready"); n+m != 0 {
		t.Fatalf("liveness/readiness probed before startup succeeded: %d, %d", n, m)
	}
	if h.m.Started("p1", "app") || h.result("p1", Startup) != Unknown {
		t.Errorf("started before the startup probe succeeded (result %v, want unknown)", h.result("p1", Startup))
	}
	if failed, _ := h.m.StartupFailed("p1", "app"); failed {
		t.Errorf("startup failed below failureThreshold")
	}
	if h.m.Ready("p1", "app") {
		t.Errorf("ready before started")
	}
	h.noRound(Readiness) // not started: Ready does not poke
	h.exec.set("start", pass)
	w := h.worker("p1", Startup)
	h.tick(time.Second, Startup) // t=4
	if !h.m.Started("p1", "app") {
		t.Fatal("not started after the startup probe succeeded")
	}
	waitClosed(t, w.done, "startup worker after success")
	h.tick(2*time.Second, Readiness, Liveness) // t=6
	if n, m := h.exec.count("live"), h.exec.count("ready"); n != 1 || m != 1 {
		t.Errorf("after startup: live %d, ready %d probes, want 1 and 1", n, m)
	}
	if h.exec.count("start") != 3 {
		t.Errorf("startup probed %d times, want 3 (none after success)", h.exec.count("start"))
	}
	if !h.m.Ready("p1", "app") {
		t.Errorf("not ready after a readiness success")
	}
}

func TestWorker_B11_StartupFailure(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("start", fail)
	h.add(appPod("p1", execProbe("start", 0, 10, 1, 2), nil, execProbe("live", 0, 10, 1, 1)), "c1")
	h.round(Startup, Liveness)
	w := h.worker("p1", Startup)
	h.tick(10*time.Second, Startup, Liveness)
	failed, msg := h.m.StartupFailed("p1", "app")
	if !failed || msg != "Container app failed startup probe" {
		t.Errorf("StartupFailed = %v, %q; want true, %q", failed, msg, "Container app failed startup probe")
	}
	if h.m.Started("p1", "app") {
		t.Error("started after a startup failure")
	}
	waitClosed(t, w.done, "startup worker after failure")
	want := []string{"Unhealthy: Startup probe failed: boom", "Unhealthy: Startup probe failed: boom"}
	if ev := h.events.all(); !reflect.DeepEqual(ev, want) {
		t.Errorf("events = %q, want %q", ev, want)
	}
	if h.exec.count("live") != 0 {
		t.Error("liveness probed although the startup probe failed")
	}
	if f, _ := h.m.LivenessFailed("p1", "app"); f {
		t.Error("liveness failed without running")
	}
}

func TestWorker_PanicIsContained(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("live", execReply{panic: true})
	h.add(appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 1)), "c1")
	h.round(Liveness) // the panic is recovered, the round thrown away
	if f, _ := h.m.LivenessFailed("p1", "app"); f {
		t.Fatal("a panicking probe counted as a failure")
	}
	h.exec.set("live", fail)
	h.tick(10*time.Second, Liveness)
	if f, _ := h.m.LivenessFailed("p1", "app"); !f {
		t.Error("the worker did not go on after a panic")
	}
}

func TestWorker_Jitter(t *testing.T) {
	t.Run("young manager delays the first probe", func(t *testing.T) {
		h := newHarness(t, harnessOpts{jitter: true})
		h.exec.set("live", pass)
		h.add(appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 1)), "c1")
		h.waitForClock()
		h.noRound(Liveness)
		h.tick(10*time.Second, Liveness) // the jitter is below one period
	})
	t.Run("older manager probes at once", func(t *testing.T) {
		h := newHarness(t, harnessOpts{jitter: true})
		h.exec.set("live", pass)
		h.clock.Step(10 * time.Second)
		h.add(appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 1)), "c1")
		h.round(Liveness)
	})
}

func TestWorker_ExecCommandExpansion(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("check", pass)
	c := v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "PORT", Value: "8080"}},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check", "--port=$(PORT)"}}}}}
	h.add(testPod("p1", c), "c1")
	h.round(Liveness)
	if got := strings.Join(h.exec.last, " "); got != "check --port=8080" {
		t.Errorf("exec ran %q, want %q", got, "check --port=8080")
	}
}

// TestWorker_SetResultFromReplacedWorker: a verdict that a replaced worker
// reports late is dropped.
func TestWorker_SetResultFromReplacedWorker(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("live", pass)
	pod := appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 1))
	h.add(pod, "c1")
	h.round(Liveness)
	old := h.worker("p1", Liveness)
	h.add(pod, "c2")
	h.round(Liveness)
	h.m.setResult(old, Failure)
	if f, _ := h.m.LivenessFailed("p1", "app"); f || h.changeCount() != 0 {
		t.Error("a replaced worker's verdict was stored")
	}
}
