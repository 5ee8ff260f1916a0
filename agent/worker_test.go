package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/clocktest"
	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// fakeOwner is a workerOwner that records what its worker tells it.
type fakeOwner struct {
	mu        sync.Mutex
	published []*v1.Pod
	done      int
}

func (o *fakeOwner) publish(p *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.published = append(o.published, p)
}

func (o *fakeOwner) workerDone(*podWorker) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done++
}

// last returns the status of container name in the latest published pod.
func (o *fakeOwner) last(name string) (v1.ContainerStatus, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.published) == 0 {
		return v1.ContainerStatus{}, false
	}
	for _, cs := range o.published[len(o.published)-1].Status.ContainerStatuses {
		if cs.Name == name {
			return cs, true
		}
	}
	return v1.ContainerStatus{}, false
}

func (o *fakeOwner) doneCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}

// startWorker runs, until the test ends, a pod worker for an Always pod
// with container "a" (image "img", added to fk) on rt, whose fake is fk,
// with a fake owner and clk. done is closed when the worker returns; wait
// polls cond for up to 5 s, failing with fk's calls.
func startWorker(t *testing.T, clk *clocktest.Clock, rt runtime.Runtime, fk *fake.Runtime) (w *podWorker, owner *fakeOwner, done <-chan struct{}, wait func(what string, cond func() bool)) {
	t.Helper()
	fk.AddImage("img")
	owner = &fakeOwner{}
	d := &workerDeps{
		rt: rt, clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil)), prober: noProber{},
		starts: startgate.New(2), teardowns: startgate.New(2), events: events.NewRecorder(clk, "node"),
		hooks: newHookRunner(execOutput(rt)), podLogsDir: t.TempDir(), resync: time.Hour, owner: owner, status: owner,
	}
	w = newPodWorker(d, testPod("Always", nil, "a"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		w.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-ran
	})
	wait = func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; calls %v", what, fk.Calls())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return w, owner, ran, wait
}

// A pod worker driven directly, with a fake owner, a fake runtime and a
// fake clock: it starts the pod, restarts a crash at once, holds the second
// crash in CrashLoopBackOff until the clock passes 10s, and on kill removes
// the pod and tells its owner (A.13, A.42).
func TestWorkerWithFakeOwnerAndClock_A13(t *testing.T) {
	clk := clocktest.New(t0)
	rt := fake.New(clk.Now)
	w, owner, done, wait := startWorker(t, clk, rt, rt)
	attempt := func(n uint32) func() bool {
		return func() bool {
			c, ok := rt.ContainerByName("uid1", "a")
			return ok && c.Attempt == n && c.State == runtime.ContainerRunning
		}
	}
	crash := func() {
		c, _ := rt.ContainerByName("uid1", "a")
		rt.Exit(c.ID, 1)
		w.wake()
	}
	wait("first start", attempt(0))
	wait("Running published", func() bool { cs, ok := owner.last("a"); return ok && cs.State.Running != nil })
	clk.Step(time.Second)
	crash()
	wait("immediate restart after the first crash", attempt(1))
	clk.Step(2 * time.Second)
	crash()
	// The exit shows first (terminated, Error), the back-off a second
	// later, as the kubelet's status comes before its back-off decision.
	wait("the exit published", func() bool {
		cs, ok := owner.last("a")
		return ok && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 1 && cs.State.Terminated.Reason == "Error"
	})
	wait("worker waiting 1s to show the back-off", func() bool { next, ok := clk.NextIn(); return ok && next == time.Second })
	clk.Step(time.Second)
	wait("CrashLoopBackOff published", func() bool {
		cs, ok := owner.last("a")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	// The worker waits for the back-off and nothing sooner: a step short
	// of it can wake nothing (and nothing ran at the step).
	wait("worker waiting 9s more on its back-off timer", func() bool { next, ok := clk.NextIn(); return ok && next == 9*time.Second })
	clk.Step(8 * time.Second)
	if attempt(2)() {
		t.Fatal("restarted before the 10s back-off passed")
	}
	clk.Step(time.Second)
	wait("restart after 10s of back-off", attempt(2))

	w.kill(nil)
	wait("owner told the pod is gone", func() bool { return owner.doneCount() == 1 })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("worker did not return after its pod was gone")
	}
	if _, ok := rt.ContainerByName("uid1", "a"); ok {
		t.Error("container still in the runtime after the kill")
	}
}

// blockingStart is a runtime whose StartContainer blocks until its context
// ends, then takes a while to return, like a CRI call in flight at shutdown.
type blockingStart struct {
	*fake.Runtime
	entered  chan struct{}
	once     sync.Once
	returned atomic.Bool
}

// StartContainer may be called again (the worker retries after the first
// call's error), so entered is closed once.
func (r *blockingStart) StartContainer(ctx context.Context, id string) error {
	r.once.Do(func() { close(r.entered) })
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond)
	r.returned.Store(true)
	return ctx.Err()
}

// Run returns only after every worker returned: no worker is still in a
// runtime call when its caller closes the runtime.
func TestRunWaitsForWorkers(t *testing.T) {
	rt := &blockingStart{Runtime: newFakeRuntime(), entered: make(chan struct{})}
	h := runTestAgent(t, testConfig(t, rt))
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
	select {
	case <-rt.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no container start")
	}
	h.stop()
	if !rt.returned.Load() {
		t.Fatal("Run returned while a worker was still in a runtime call")
	}
}

// failingRemove is a fake runtime whose RemoveContainer fails while fail
// is set, like containerd with a task it cannot delete; it counts calls.
type failingRemove struct {
	*fake.Runtime
	fail    atomic.Bool
	removes atomic.Int32
}

func (r *failingRemove) RemoveContainer(ctx context.Context, id string) error {
	r.removes.Add(1)
	if r.fail.Load() {
		return errors.New("cannot delete running task")
	}
	return r.Runtime.RemoveContainer(ctx, id)
}

// A kill that fails is retried after 1 s, 2 s, 4 s ... up to 10 s, and
// wakes do not bring a retry sooner; once the runtime recovers the pod
// goes.
func TestWorkerKillRetryBacksOff(t *testing.T) {
	clk := clocktest.New(t0)
	rt := &failingRemove{Runtime: fake.New(clk.Now)}
	w, owner, _, wait := startWorker(t, clk, rt, rt.Runtime)
	wait("running", func() bool {
		c, ok := rt.ContainerByName("uid1", "a")
		return ok && c.State == runtime.ContainerRunning
	})
	rt.fail.Store(true)
	w.kill(nil)
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		wait(fmt.Sprintf("failed removal %d", i+1), func() bool { return rt.removes.Load() == int32(i+1) })
		wait(fmt.Sprintf("a %s back-off", backoff), func() bool { next, ok := clk.NextIn(); return ok && next == backoff })
		w.wake()
		w.wake()
		time.Sleep(20 * time.Millisecond)
		if n := rt.removes.Load(); n != int32(i+1) {
			t.Fatalf("a wake brought a retry: %d removals", n)
		}
		if i == 5 {
			rt.fail.Store(false)
		}
		clk.Step(backoff)
	}
	wait("owner told the pod is gone", func() bool { return owner.doneCount() == 1 })
}
