package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

func TestCanSkipResync(t *testing.T) {
	idle := resyncState{idle: true, mark: relistMark{listings: 10, changes: 3}}
	cases := []struct {
		name string
		s    resyncState
		now  relistMark
		want bool
	}{
		{"nothing changed, relist ran since", idle, relistMark{listings: 12, changes: 3}, true},
		{"relist found the pod changed", idle, relistMark{listings: 12, changes: 4}, false},
		{"no listing since the sync", idle, relistMark{listings: 10, changes: 3}, false},
		// The one listing since may have started before the sync observed.
		{"one listing since the sync", idle, relistMark{listings: 11, changes: 3}, false},
		{"last sync left work pending", resyncState{mark: idle.mark}, relistMark{listings: 12, changes: 3}, false},
		{"quiet resyncs left", resyncState{idle: true, mark: idle.mark, skipped: maxQuietResyncs - 1}, relistMark{listings: 12, changes: 3}, true},
		{"every Nth resync is full", resyncState{idle: true, mark: idle.mark, skipped: maxQuietResyncs}, relistMark{listings: 12, changes: 3}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := canSkipResync(tc.s, tc.now); got != tc.want {
				t.Errorf("canSkipResync(%+v, %+v) = %v, want %v", tc.s, tc.now, got, tc.want)
			}
		})
	}
}

// readCounting is a fake runtime that counts the calls a sync makes to
// observe a pod.
type readCounting struct {
	*fake.Runtime
	reads atomic.Int64
}

func (r *readCounting) ListSandboxes(ctx context.Context, l map[string]string) ([]*runtime.Sandbox, error) {
	r.reads.Add(1)
	return r.Runtime.ListSandboxes(ctx, l)
}

func (r *readCounting) SandboxStatus(ctx context.Context, id string) (*runtime.SandboxStatus, error) {
	r.reads.Add(1)
	return r.Runtime.SandboxStatus(ctx, id)
}

func (r *readCounting) ListContainers(ctx context.Context, f runtime.ContainerFilter) ([]*runtime.Container, error) {
	r.reads.Add(1)
	return r.Runtime.ListContainers(ctx, f)
}

func (r *readCounting) ContainerStatus(ctx context.Context, id string) (*runtime.ContainerStatus, error) {
	r.reads.Add(1)
	return r.Runtime.ContainerStatus(ctx, id)
}

// A running pod's worker, with a fake clock and a relist counter the test
// drives: a resync while the relist sees nothing change makes no runtime
// call and publishes nothing; every 5th resync is full anyway; a pod the
// relist saw change (here a crash no wake reported), a relist that did not
// run, a back-off timer and a wake all make the sync full.
func TestWorkerSkipsQuietResyncs(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := &readCounting{Runtime: fake.New(clk.Now)}
	rt.AddImage("img")
	owner := &fakeOwner{}
	var relisted atomic.Uint64
	d := &workerDeps{
		rt: rt, clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil)), prober: noProber{},
		starts: startgate.New(2), teardowns: startgate.New(2), events: events.NewRecorder(clk, "node"),
		hooks: newHookRunner(execOutput(rt)), podLogsDir: t.TempDir(), resync: time.Minute,
		relisted: &relisted, owner: owner, status: owner,
	}
	w := newPodWorker(d, testPod("Always", nil, "a"), nil)
	runWorker(t, w)
	wait := func(what string, cond func() bool) { t.Helper(); waitUntil(t, what, cond) }
	published := func() int {
		owner.mu.Lock()
		defer owner.mu.Unlock()
		return len(owner.published)
	}
	running := func(attempt uint32) func() bool {
		return func() bool {
			c, ok := rt.ContainerByName("uid1", "a")
			return ok && c.Attempt == attempt && c.State == runtime.ContainerRunning
		}
	}
	// resync lets the resync timer fire and waits until the worker is
	// back on a timer; it reports whether that resync read the runtime or
	// published.
	resync := func(what string) (full bool) {
		t.Helper()
		wait("worker on its timer before "+what, clk.HasWaiters)
		reads, pubs := rt.reads.Load(), published()
		clk.Step(time.Minute)
		wait("worker on its timer after "+what, clk.HasWaiters)
		r, p := rt.reads.Load()-reads, published()-pubs
		if (r == 0) != (p == 0) {
			t.Fatalf("%s: %d runtime reads but %d publications", what, r, p)
		}
		return r > 0
	}
	wait("container running", running(0))
	wait("Running published", func() bool { cs, ok := owner.last("a"); return ok && cs.State.Running != nil })

	relisted.Add(2)
	for i := range maxQuietResyncs {
		if resync("quiet resync") {
			t.Fatalf("quiet resync %d read the runtime", i+1)
		}
	}
	if !resync("resync after 4 quiet ones") {
		t.Error("the 5th resync in a row was skipped")
	}

	if !resync("resync with no listing since the last sync") {
		t.Error("a resync with no relist since the sync was skipped")
	}
	relisted.Add(2)
	if resync("quiet resync after a full one") {
		t.Fatal("a quiet resync after a full one read the runtime")
	}

	// The container crashes; nothing wakes the worker, the relist only
	// counts the change: the resync is full and restarts it.
	c, _ := rt.ContainerByName("uid1", "a")
	rt.Exit(c.ID, 1)
	w.relistChanges.Add(1)
	relisted.Add(2)
	if !resync("resync of a pod the relist saw change") {
		t.Error("the resync of a changed pod was skipped")
	}
	wait("restart after the crash", running(1))

	// It crashes again and waits in back-off: the back-off timer is no
	// resync, so the restart is not skipped even though the relist (as
	// the test drives it) saw nothing.
	c, _ = rt.ContainerByName("uid1", "a")
	rt.Exit(c.ID, 1)
	w.wake()
	wait("the exit published", func() bool {
		cs, ok := owner.last("a")
		return ok && cs.State.Terminated != nil
	})
	wait("worker on its timer to show the back-off", clk.HasWaiters)
	clk.Step(time.Second)
	wait("CrashLoopBackOff published", func() bool {
		cs, ok := owner.last("a")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	wait("worker on its back-off timer", clk.HasWaiters)
	relisted.Add(2)
	clk.Step(9 * time.Second)
	wait("restart after the back-off", running(2))

	// A wake is never skipped.
	wait("worker on its timer", clk.HasWaiters)
	relisted.Add(2)
	reads := rt.reads.Load()
	w.wake()
	wait("woken worker reads the runtime", func() bool { return rt.reads.Load() > reads })
}

// failingList is a listedRuntime whose listings fail while fail is set.
type failingList struct {
	*listedRuntime
	fail atomic.Bool
}

func (r *failingList) ListContainers(ctx context.Context, f runtime.ContainerFilter) ([]*runtime.Container, error) {
	if r.fail.Load() {
		return nil, errors.New("runtime down")
	}
	return r.listedRuntime.ListContainers(ctx, f)
}

// The relist counts its successful listings, and for each pod the listings
// that found it changed, including a pod that is gone (which wakes nobody):
// what canSkipResync compares.
func TestRelistCountsListingsAndChanges(t *testing.T) {
	a, lrt := relistAgent(t, "a", "b")
	rt := &failingList{listedRuntime: lrt}
	a.cfg.Runtime, a.relist.rt = rt, rt
	r, exits := newRelister(), newExitQueue()
	ctx := context.Background()
	both := func() {
		rt.set([]*runtime.Sandbox{listedSandbox("a", "sa", runtime.SandboxReady), listedSandbox("b", "sb", runtime.SandboxReady)},
			[]*runtime.Container{listedContainer("a", "ca", runtime.ContainerRunning), listedContainer("b", "cb", runtime.ContainerRunning)})
	}
	changes := func() []uint64 {
		return []uint64{a.workers["a"].relistChanges.Load(), a.workers["b"].relistChanges.Load()}
	}
	step := func(what string, wantListings uint64, wantChanges []uint64, wantWoken []string) {
		t.Helper()
		_, err := a.relist.once(ctx, r, exits)
		if rt.fail.Load() != (err != nil) {
			t.Fatalf("%s: relist error %v", what, err)
		}
		if got := a.relist.listings.Load(); got != wantListings {
			t.Errorf("%s: %d listings counted, want %d", what, got, wantListings)
		}
		if got := changes(); !slices.Equal(got, wantChanges) {
			t.Errorf("%s: changes %v, want %v", what, got, wantChanges)
		}
		if got := woken(a); !slices.Equal(got, wantWoken) {
			t.Errorf("%s: woke %v, want %v", what, got, wantWoken)
		}
	}
	both()
	step("first listing", 1, []uint64{1, 1}, []string{"a", "b"})
	step("unchanged", 2, []uint64{1, 1}, nil)
	rt.set([]*runtime.Sandbox{listedSandbox("a", "sa", runtime.SandboxReady)},
		[]*runtime.Container{listedContainer("a", "ca", runtime.ContainerExited)})
	step("a exited, b gone", 3, []uint64{2, 2}, []string{"a"})
	rt.fail.Store(true)
	step("failed listing", 3, []uint64{2, 2}, nil)
	rt.fail.Store(false)
	both()
	step("b back", 4, []uint64{3, 3}, []string{"a", "b"})
}

// A pod with an active deadline further than the resync: the resync
// before the deadline is full (its timer is then the deadline), so the pod
// fails on time even though the relist sees nothing change (A.9).
func TestWorkerNeverSkipsResyncWithDeadline_A9(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(clk.Now)
	rt.AddImage("img")
	owner := &fakeOwner{}
	var relisted atomic.Uint64
	d := &workerDeps{
		rt: rt, clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil)), prober: noProber{},
		starts: startgate.New(2), teardowns: startgate.New(2), events: events.NewRecorder(clk, "node"),
		hooks: newHookRunner(execOutput(rt)), podLogsDir: t.TempDir(), resync: time.Minute,
		relisted: &relisted, owner: owner, status: owner,
	}
	pod := testPod("Always", nil, "a")
	ads := int64(90)
	pod.Spec.ActiveDeadlineSeconds = &ads
	w := newPodWorker(d, pod, nil)
	runWorker(t, w)
	wait := func(what string, cond func() bool) { t.Helper(); waitUntil(t, what, cond) }
	failed := func() bool {
		owner.mu.Lock()
		defer owner.mu.Unlock()
		n := len(owner.published)
		return n > 0 && owner.published[n-1].Status.Reason == "DeadlineExceeded"
	}
	wait("Running published", func() bool { cs, ok := owner.last("a"); return ok && cs.State.Running != nil })
	wait("worker on its resync timer", clk.HasWaiters)
	relisted.Add(2)
	clk.Step(time.Minute)
	wait("worker on its deadline timer", clk.HasWaiters)
	relisted.Add(2)
	clk.Step(30 * time.Second)
	wait("pod failed at its deadline", failed)
}

// runWorker runs w until the test ends (its cleanup cancels and waits).
func runWorker(t *testing.T, w *podWorker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitUntil polls cond every millisecond and fails the test after 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
