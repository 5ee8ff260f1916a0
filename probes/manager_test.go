package probes

import (
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestManager_B9_B10_B11_InitialResults(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// A long initial delay keeps every probe at its initial result.
	pod := appPod("p1", execProbe("start", 100, 10, 1, 3), execProbe("ready", 100, 10, 1, 3), execProbe("live", 100, 10, 1, 3))
	h.add(pod, "c1")
	h.round(Startup, Readiness, Liveness)
	want := map[Kind]Result{Startup: Unknown, Readiness: Failure, Liveness: Success}
	for k, r := range want {
		if got, ok := h.m.Result("p1", "app", k); !ok || got != r {
			t.Errorf("%v result = %v, %v; want %v", k, got, ok, r)
		}
	}
	if h.m.Started("p1", "app") || h.m.Ready("p1", "app") {
		t.Error("started or ready before any probe ran")
	}
	if f, _ := h.m.LivenessFailed("p1", "app"); f {
		t.Error("liveness failed before any probe ran")
	}
	if f, _ := h.m.StartupFailed("p1", "app"); f {
		t.Error("startup failed before any probe ran")
	}
	if n := h.changeCount(); n != 0 {
		t.Errorf("AddContainer sent on Changes %d times", n)
	}
	// Without probes (B.9-B.11): started, ready, not failed.
	h.add(testPod("p2", v1.Container{Name: "app"}), "c2")
	if _, ok := h.m.Result("p2", "app", Liveness); ok {
		t.Error("a container without probes has a result")
	}
	if !h.m.Started("p2", "app") || !h.m.Ready("p2", "app") {
		t.Error("a container without probes is not started and ready")
	}
}

func TestManager_ResultsBoundToContainerID(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("live", fail)
	pod := appPod("p1", nil, execProbe("ready", 0, 10, 1, 1), execProbe("live", 0, 10, 1, 1))
	h.exec.set("ready", pass)
	h.add(pod, "c1")
	h.round(Readiness, Liveness)
	if f, _ := h.m.LivenessFailed("p1", "app"); !f || !h.m.Ready("p1", "app") {
		t.Fatal("want liveness failed and ready for c1")
	}
	live1, ready1 := h.worker("p1", Liveness), h.worker("p1", Readiness)

	// The same ID again changes nothing.
	h.add(pod, "c1")
	if h.worker("p1", Liveness) != live1 || h.worker("p1", Readiness) != ready1 {
		t.Fatal("AddContainer with the same ID replaced the workers")
	}
	if f, _ := h.m.LivenessFailed("p1", "app"); !f {
		t.Fatal("AddContainer with the same ID reset the liveness result")
	}
	h.noRound(Liveness)

	// A new ID (the container restarted) resets the results and the workers.
	h.exec.set("live", pass)
	h.exec.set("ready", fail)
	h.add(pod, "c2")
	if f, _ := h.m.LivenessFailed("p1", "app"); f {
		t.Error("liveness still failed for the new container")
	}
	if h.result("p1", Readiness) != Failure {
		t.Error("readiness not reset to Failure for the new container")
	}
	waitClosed(t, live1.done, "old liveness worker")
	waitClosed(t, ready1.done, "old readiness worker")
	h.round(Readiness, Liveness)
	if h.exec.lastID != "c2" {
		t.Errorf("probes ran in %q, want the new container c2", h.exec.lastID)
	}
}

func TestManager_B11_ReadyPokesReadinessAfterStartup(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("start", fail)
	h.exec.set("ready", pass)
	// Readiness ticks every 100s: only Ready's poke can probe it soon.
	pod := appPod("p1", execProbe("start", 0, 1, 1, 10), execProbe("ready", 0, 100, 1, 3), nil)
	h.add(pod, "c1")
	h.round(Startup, Readiness)
	h.exec.set("start", pass)
	h.tick(time.Second, Startup)
	if !h.m.Started("p1", "app") {
		t.Fatal("not started")
	}
	if h.m.Ready("p1", "app") {
		t.Fatal("ready before the readiness probe ran")
	}
	h.round(Readiness) // poked by Ready, at once
	if !h.m.Ready("p1", "app") {
		t.Error("not ready after the poked readiness probe succeeded")
	}
	if n := h.exec.count("ready"); n != 1 {
		t.Errorf("readiness probed %d times, want 1", n)
	}
	h.noRound(Readiness) // ready: no more pokes
}

// A failing readiness probe is not re-run at every status computation:
// each early round loaded a busy node more (see Ready).
func TestManager_B10_ReadyPokesOncePerContainer(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("ready", fail)
	pod := appPod("p1", nil, execProbe("ready", 0, 100, 1, 1), nil)
	h.add(pod, "c1")
	h.round(Readiness) // the worker's first round
	for range 3 {
		if h.m.Ready("p1", "app") {
			t.Fatal("ready with a failing readiness probe")
		}
	}
	h.round(Readiness) // the one poke
	for range 3 {
		h.m.Ready("p1", "app")
	}
	h.noRound(Readiness)
	if n := h.exec.count("ready"); n != 2 {
		t.Errorf("readiness probed %d times, want 2 (first round + one poke)", n)
	}
	// A new container is poked again.
	h.add(pod, "c2")
	h.round(Readiness)
	h.m.Ready("p1", "app")
	h.round(Readiness)
}

// A poke while the probe runs would only run it twice in a row.
func TestWorkerPokeDuringProbeIsDropped(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("ready", pass)
	h.exec.mu.Lock()
	h.exec.block = make(chan struct{})
	h.exec.mu.Unlock()
	pod := appPod("p1", nil, execProbe("ready", 0, 100, 1, 3), nil)
	h.add(pod, "c1")
	w := h.worker("p1", Readiness)
	deadline := time.Now().Add(waitLimit)
	for h.exec.count("ready") == 0 || !w.probing.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the first probe never started")
		}
		time.Sleep(time.Millisecond)
	}
	w.poke()
	close(h.exec.block)
	h.round(Readiness)
	h.noRound(Readiness)
	if n := h.exec.count("ready"); n != 1 {
		t.Errorf("probed %d times, want 1", n)
	}
}

func TestManager_RemoveStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t, harnessOpts{})
	h.exec.set("ready", pass)
	h.exec.set("live", pass)
	probe := func(uid string) *v1.Pod {
		p := appPod(uid, nil, execProbe("ready", 0, 10, 1, 3), execProbe("live", 0, 10, 1, 3))
		side := p.Spec.Containers[0]
		side.Name = "side"
		p.Spec.Containers = append(p.Spec.Containers, side)
		return p
	}
	pa, pb := probe("a"), probe("b")
	for _, p := range []*v1.Pod{pa, pb} {
		for i := range p.Spec.Containers {
			h.m.AddContainer(p, "127.0.0.1", &p.Spec.Containers[i], string(p.UID)+"-"+p.Spec.Containers[i].Name, h.clock.Now())
		}
	}
	workers := func(uid, container string) []*worker {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		var ws []*worker
		for k := Startup; k <= Liveness; k++ {
			if e := h.m.entries[probeKey{podUID: types.UID(uid), container: container, kind: k}]; e != nil && e.w != nil {
				ws = append(ws, e.w)
			}
		}
		return ws
	}
	aApp, aSide, bApp := workers("a", "app"), workers("a", "side"), workers("b", "app")
	if len(aApp) != 2 || len(aSide) != 2 || len(bApp) != 2 {
		t.Fatalf("workers: %d %d %d, want 2 each", len(aApp), len(aSide), len(bApp))
	}
	alive := func(ws []*worker) bool {
		for _, w := range ws {
			select {
			case <-w.done:
				return false
			default:
			}
		}
		return true
	}

	h.m.RemoveContainer("a", "app")
	h.m.RemoveContainer("a", "app") // idempotent
	for _, w := range aApp {
		waitClosed(t, w.done, "worker of a removed container")
	}
	if _, ok := h.m.Result("a", "app", Readiness); ok {
		t.Error("a removed container keeps its result")
	}
	if !alive(aSide) || !alive(bApp) {
		t.Fatal("RemoveContainer stopped other containers' workers")
	}

	h.m.RemovePod("a")
	h.m.RemovePod("nope") // unknown pods are fine
	for _, w := range aSide {
		waitClosed(t, w.done, "worker of a removed pod")
	}
	if !alive(bApp) {
		t.Fatal("RemovePod stopped another pod's workers")
	}

	h.m.Stop() // waits for every worker goroutine
	for _, w := range bApp {
		select {
		case <-w.done:
		default:
			t.Error("Stop returned before a worker ended")
		}
	}
	h.m.Stop() // idempotent
	h.add(pb, "b-app-2")
	if _, ok := h.m.Result("b", "app", Liveness); ok {
		t.Error("AddContainer after Stop added a probe")
	}
	// No goroutine is left behind.
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Stop, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestManager_StopCancelsRunningProbe(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.block = make(chan struct{}) // every exec hangs until cancelled
	h.add(appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 1)), "c1")
	w := h.worker("p1", Liveness)
	deadline := time.Now().Add(waitLimit)
	for h.exec.count("live") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the probe did not start")
		}
		time.Sleep(time.Millisecond)
	}
	h.m.RemoveContainer("p1", "app")
	waitClosed(t, w.done, "worker with a hanging probe")
	if ev := h.events.all(); len(ev) != 0 {
		t.Errorf("a cancelled probe recorded events: %q", ev)
	}
}

// TestManager_TerminatingPod: for a pod being deleted, liveness and startup
// probes stop with Success (quiet shutdown); readiness keeps running.
func TestManager_TerminatingPod(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("start", fail)
	h.exec.set("live", fail)
	h.exec.set("ready", pass)
	pod := appPod("p1", execProbe("start", 0, 10, 1, 1), execProbe("ready", 0, 10, 1, 1), execProbe("live", 0, 10, 1, 1))
	now := metav1.NewTime(t0)
	pod.DeletionTimestamp = &now
	h.add(pod, "c1")
	h.round(Readiness)
	for _, k := range []Kind{Startup, Liveness} {
		if r := h.result("p1", k); r != Success || h.worker("p1", k) != nil {
			t.Errorf("%v of a terminating pod: %v with a worker; want Success without", k, r)
		}
	}
	h.tick(10*time.Second, Readiness)
	if h.exec.count("start")+h.exec.count("live") != 0 {
		t.Error("liveness or startup probed in a terminating pod")
	}
	if h.exec.count("ready") != 2 || !h.m.Ready("p1", "app") {
		t.Error("readiness did not keep running in a terminating pod")
	}
}

func TestManager_LivenessFailureThenTerminating(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.exec.set("live", fail)
	pod := appPod("p1", nil, nil, execProbe("live", 0, 10, 1, 1))
	h.add(pod, "c1")
	h.round(Liveness)
	if f, _ := h.m.LivenessFailed("p1", "app"); !f {
		t.Fatal("liveness not failed")
	}
	dying := pod.DeepCopy()
	now := metav1.NewTime(t0)
	dying.DeletionTimestamp = &now
	h.add(dying, "c1")
	if f, _ := h.m.LivenessFailed("p1", "app"); f {
		t.Error("liveness still failed once the pod is terminating")
	}
}
