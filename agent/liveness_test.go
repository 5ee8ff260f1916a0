package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// SourcesReady waits for every source's first list and for the reconcile
// that publishes its pods: READY=1 (cmd/skiff/systemd.go) means the
// agent knows its desired state.
func TestSourcesReadyAfterEverySourceListed(t *testing.T) {
	rt := newFakeRuntime()
	a, err := New(testConfig(t, rt))
	if err != nil {
		t.Fatal(err)
	}
	file, api := &chanSource{ch: make(chan []*v1.Pod, 1)}, &chanSource{ch: make(chan []*v1.Pod, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx, map[string]Source{"file": file, "api": api}) }()
	defer func() { cancel(); <-done }()
	h := &harness{t: t, rt: rt, agent: a}

	file.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	h.eventually("the file source's pod published", func() bool { return h.pod("uid1") != nil })
	if isClosed(a.SourcesReady()) {
		t.Fatal("SourcesReady closed before the api source delivered its first list")
	}
	api.ch <- nil // an empty first list counts
	select {
	case <-a.SourcesReady():
	case <-time.After(5 * time.Second):
		t.Fatal("SourcesReady not closed after both sources listed")
	}
	if h.pod("uid1") == nil {
		t.Error("SourcesReady closed, but the file source's pod is not published")
	}
	if _, total := a.PodCounts(); total != 1 {
		t.Errorf("PodCounts total %d, want 1", total)
	}
}

func TestSourcesReadyWithoutSources(t *testing.T) {
	a, err := New(testConfig(t, newFakeRuntime()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	select {
	case <-a.SourcesReady():
	case <-time.After(5 * time.Second):
		t.Fatal("SourcesReady not closed for an agent without sources")
	}
}

// hangingList is a runtime whose relist listing (all managed sandboxes)
// blocks, ignoring its context, once hang is set: a stuck sync loop.
type hangingList struct {
	*fake.Runtime
	hang    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (r *hangingList) ListSandboxes(ctx context.Context, labels map[string]string) ([]*runtime.Sandbox, error) {
	if labels[labelPodUID] == "" && r.hang.Load() {
		r.entered <- struct{}{}
		<-r.release
	}
	return r.Runtime.ListSandboxes(ctx, labels)
}

// The heartbeat follows the relist loop's iterations and stops while a
// listing hangs (the watchdog's liveness signal).
func TestHeartbeatStopsWhileRelistHangs(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	rt := &hangingList{Runtime: newFakeRuntime(), entered: make(chan struct{}), release: make(chan struct{})}
	cfg := testConfig(t, rt)
	cfg.Clock, cfg.RelistPeriod = clk, time.Second
	h := runTestAgent(t, cfg)
	if !h.agent.Heartbeat().IsZero() && h.agent.Heartbeat() != clk.Now() {
		t.Fatalf("heartbeat %v before any relist", h.agent.Heartbeat())
	}
	h.eventually("first heartbeat", func() bool { return h.agent.Heartbeat().Equal(clk.Now()) })
	for range 3 {
		clk.Step(time.Second)
		h.eventually("heartbeat after a relist", func() bool { return h.agent.Heartbeat().Equal(clk.Now()) })
	}
	last := clk.Now()
	rt.hang.Store(true)
	clk.Step(time.Second)
	<-rt.entered // the relist is stuck in its listing
	clk.Step(time.Minute)
	if got := h.agent.Heartbeat(); !got.Equal(last) {
		t.Errorf("heartbeat %v while the relist hangs, want the last one %v", got, last)
	}
	rt.hang.Store(false)
	close(rt.release)
	h.eventually("heartbeat once the relist returned", func() bool { return h.agent.Heartbeat().Equal(clk.Now()) })
}
