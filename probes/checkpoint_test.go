package probes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// readCheckpoint waits until the file at path holds want (the write runs
// in an AfterFunc goroutine) and fails the test if it never does.
func readCheckpoint(t *testing.T, path string, want map[string]checkpointEntry) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var got checkpointFile
	for {
		got = checkpointFile{}
		data, err := os.ReadFile(path)
		if err == nil && json.Unmarshal(data, &got) == nil && got.Version == checkpointVersion && reflect.DeepEqual(got.Containers, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %s: got %+v (err %v), want %+v", path, got.Containers, err, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// A restarted agent (a new Manager on the same checkpoint) starts a
// container the old one saw ready and started as ready and started, so
// the pod's Ready condition does not flip (KEP-4781), until its own probes
// say otherwise; another container ID of the same container starts from
// the defaults.
func TestCheckpoint_ReadinessAndStartupSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probes.json")
	old := newHarness(t, harnessOpts{checkpoint: path})
	old.exec.set("start", pass)
	old.exec.set("ready", pass)
	// The readiness probe's initial delay keeps its first round (at once,
	// like the startup probe's) from seeing the startup result.
	pod := appPod("p1", execProbe("start", 0, 10, 1, 1), execProbe("ready", 1, 10, 1, 1), nil)
	old.add(pod, "c1")
	old.round(Startup, Readiness) // startup succeeds, readiness waits
	old.clock.Step(checkpointDelay)
	started := map[string]checkpointEntry{"c1": {PodUID: "p1", Container: "app", Started: true}}
	readCheckpoint(t, path, started)
	old.tick(10*time.Second-checkpointDelay, Readiness) // ready
	if !old.m.Ready("p1", "app") {
		t.Fatal("old agent: container not ready")
	}
	// The write comes checkpointDelay after the change, not earlier:
	// nothing the manager waits for is due sooner, so a step short of it
	// can wake nothing (and nothing was written at the step).
	if next, ok := old.clock.NextIn(); !ok || next != checkpointDelay {
		t.Fatalf("the manager's next wake-up in %v (any: %t), want the checkpoint delay %v", next, ok, checkpointDelay)
	}
	old.clock.Step(checkpointDelay - time.Millisecond)
	readCheckpoint(t, path, started)
	old.clock.Step(time.Millisecond)
	readCheckpoint(t, path, map[string]checkpointEntry{"c1": {PodUID: "p1", Container: "app", Ready: true, Started: true}})
	// The old agent is killed: no Stop, nothing more is written.

	// The first-probe jitter holds the new agent's first probe until the
	// clock steps, so the results before it can be checked.
	h := newHarness(t, harnessOpts{checkpoint: path, jitter: true})
	h.exec.set("ready", fail)
	h.addStartedAt(pod, "c1", h.clock.Now().Add(-time.Minute)) // running all along
	if !h.m.Started("p1", "app") || !h.m.Ready("p1", "app") {
		t.Fatal("restarted agent: container not started and ready before any probe ran")
	}
	if h.worker("p1", Startup) != nil {
		t.Error("a startup probe that succeeded before the restart runs again")
	}
	// The first probe of the new agent decides.
	h.waitForClock() // the worker waits out its jitter
	h.tick(10*time.Second, Readiness)
	if h.m.Ready("p1", "app") {
		t.Error("still ready after the new agent's probe failed")
	}
	if n := h.changeCount(); n != 1 {
		t.Errorf("OnChange called %d times, want once (ready -> not ready)", n)
	}
	// A new container ID starts from the defaults.
	h2 := newHarness(t, harnessOpts{checkpoint: path})
	h2.add(appPod("p1", execProbe("start", 100, 10, 1, 1), execProbe("ready", 100, 10, 1, 1), nil), "c2")
	if h2.m.Started("p1", "app") || h2.m.Ready("p1", "app") {
		t.Error("a new container ID inherited another container's results")
	}
}

// Writes are coalesced and carry only what is true now: removed pods and,
// after restoreGrace, loaded entries nobody claimed are dropped; Stop
// writes a pending change at once.
func TestCheckpoint_WritesCoalescedAndPruned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probes.json")
	seed := map[string]checkpointEntry{
		"gone":    {PodUID: "old", Container: "app", Ready: true},
		"removed": {PodUID: "p9", Container: "app", Ready: true},
	}
	if err := writeFileAtomic(path, checkpointFile{Version: checkpointVersion, Containers: seed}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{checkpoint: path})
	h.m.RemovePod("p9")
	h.exec.set("ready", pass)
	for _, uid := range []string{"p1", "p2"} {
		h.add(appPod(uid, nil, execProbe("ready", 0, 10, 1, 1), nil), "c-"+uid)
	}
	h.round(Readiness, Readiness)
	h.clock.Step(checkpointDelay)
	readCheckpoint(t, path, map[string]checkpointEntry{
		"gone": seed["gone"], // unclaimed, within restoreGrace
		"c-p1": {PodUID: "p1", Container: "app", Ready: true},
		"c-p2": {PodUID: "p2", Container: "app", Ready: true},
	})

	h.m.RemovePod("p2")
	h.exec.set("ready", fail)
	h.tick(restoreGrace, Readiness) // p1 no longer ready; the grace is over
	h.m.Stop()                      // writes the pending change now
	readCheckpoint(t, path, map[string]checkpointEntry{})
}

// Removing a container or a pod rewrites the checkpoint without its
// results, checkpointDelay later, with nothing else changing.
func TestCheckpoint_RemovalWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probes.json")
	h := newHarness(t, harnessOpts{checkpoint: path})
	h.exec.set("ready", pass)
	for _, uid := range []string{"p1", "p2"} {
		h.add(appPod(uid, nil, execProbe("ready", 0, 10, 1, 1), nil), "c-"+uid)
	}
	h.round(Readiness, Readiness)
	h.clock.Step(checkpointDelay)
	readCheckpoint(t, path, map[string]checkpointEntry{
		"c-p1": {PodUID: "p1", Container: "app", Ready: true},
		"c-p2": {PodUID: "p2", Container: "app", Ready: true},
	})
	h.m.RemoveContainer("p1", "app")
	h.clock.Step(checkpointDelay)
	readCheckpoint(t, path, map[string]checkpointEntry{"c-p2": {PodUID: "p2", Container: "app", Ready: true}})
	h.m.RemovePod("p2")
	h.clock.Step(checkpointDelay)
	readCheckpoint(t, path, map[string]checkpointEntry{})
}

// A checkpoint that cannot be read costs only the carried-over results.
func TestCheckpoint_CorruptFileIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probes.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{checkpoint: path})
	h.add(appPod("p1", nil, execProbe("ready", 100, 10, 1, 1), nil), "c1")
	if h.m.Ready(types.UID("p1"), "app") {
		t.Error("ready from a corrupt checkpoint")
	}
}
