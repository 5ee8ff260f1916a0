package probes

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/clocktest"
)

// harness drives a Manager on a fake clock with a fake Execer. Each worker
// round is reported on rounds[kind] (through the afterIteration hook), so a
// test steps the clock and then waits for the rounds it expects; nothing
// sleeps for real except noRound's short wait.
type harness struct {
	t        *testing.T
	clock    *clocktest.Clock
	exec     *fakeExec
	events   *eventLog
	m        *Manager
	rounds   [Liveness + 1]chan struct{}
	changeCh chan types.UID // Config.Changes, never full in a test
	changes  int32          // UIDs received from changeCh (see changeCount)
}

// harnessOpts tunes newHarness.
type harnessOpts struct {
	jitter bool // leave the Manager's first-probe jitter on
	// startsIdle is Config.StartsIdle.
	startsIdle func() <-chan struct{}
	// checkpoint is Config.CheckpointPath.
	checkpoint string
	// tickGrid is Config.TickGrid.
	tickGrid time.Duration
}

func newHarness(t *testing.T, opts harnessOpts) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), exec: newFakeExec(), events: &eventLog{}, changeCh: make(chan types.UID, 10000)}
	for k := range h.rounds {
		h.rounds[k] = make(chan struct{}, 1000)
	}
	h.m = NewManager(Config{
		Exec:           h.exec,
		Clock:          h.clock,
		Logger:         discardLogger(),
		DisableJitter:  !opts.jitter,
		StartsIdle:     opts.startsIdle,
		Changes:        h.changeCh,
		CheckpointPath: opts.checkpoint,
		TickGrid:       opts.tickGrid,
		Events: func(_ *v1.Pod, container, eventType, reason, message string) {
			if container != "app" || eventType != v1.EventTypeWarning {
				t.Errorf("event for %q of type %q, want app/Warning", container, eventType)
			}
			h.events.add(reason, message)
		},
	})
	h.m.afterIteration = func(k Kind) { h.rounds[k] <- struct{}{} }
	t.Cleanup(h.m.Stop)
	return h
}

// add registers the pod's first container as containerID, started now.
func (h *harness) add(pod *v1.Pod, containerID string) {
	h.addStartedAt(pod, containerID, h.clock.Now())
}

func (h *harness) addStartedAt(pod *v1.Pod, containerID string, startedAt time.Time) {
	h.m.AddContainer(pod, "127.0.0.1", &pod.Spec.Containers[0], containerID, startedAt)
}

// round waits for the next round of each of kinds.
func (h *harness) round(kinds ...Kind) {
	h.t.Helper()
	for _, k := range kinds {
		select {
		case <-h.rounds[k]:
		case <-time.After(waitLimit):
			h.t.Fatalf("no %v round within %v", k, waitLimit)
		}
	}
}

// tick steps the clock by d and waits for one round of each of kinds.
func (h *harness) tick(d time.Duration, kinds ...Kind) {
	h.t.Helper()
	h.clock.Step(d)
	h.round(kinds...)
}

// noRound checks that no round of kind k is pending or comes within a
// short real wait.
func (h *harness) noRound(k Kind) {
	h.t.Helper()
	select {
	case <-h.rounds[k]:
		h.t.Fatalf("unexpected %v round", k)
	case <-time.After(50 * time.Millisecond):
	}
}

// waitForClock waits until some worker waits on the fake clock.
func (h *harness) waitForClock() {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !h.clock.HasWaiters() {
		if time.Now().After(deadline) {
			h.t.Fatal("no worker waits on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

// worker returns the current worker of the probe of kind k of container
// "app" of pod uid, or nil.
func (h *harness) worker(uid string, k Kind) *worker {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if e := h.m.entries[probeKey{podUID: types.UID(uid), container: "app", kind: k}]; e != nil {
		return e.w
	}
	return nil
}

// result is Manager.Result for container "app" of pod uid.
func (h *harness) result(uid string, k Kind) Result {
	r, _ := h.m.Result(types.UID(uid), "app", k)
	return r
}

// appPod returns pod uid with one container "app" carrying the probes.
func appPod(uid string, startup, readiness, liveness *v1.Probe) *v1.Pod {
	return testPod(uid, v1.Container{Name: "app", StartupProbe: startup, ReadinessProbe: readiness, LivenessProbe: liveness})
}

var (
	pass = execReply{stdout: "ok"}
	fail = execReply{exit: 1, stdout: "boom"}
)

// changeCount returns how many changes the Manager has sent so far.
func (h *harness) changeCount() int32 {
	for {
		select {
		case <-h.changeCh:
			h.changes++
		default:
			return h.changes
		}
	}
}
