package containerd

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/typeurl/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeSub struct {
	envs chan *events.Envelope
	errs chan error
}

// fakeEvents is a containerd event service: IsServing answers from
// servingErrs (then nil), each Subscribe hands its channels to subs.
type fakeEvents struct {
	mu          sync.Mutex
	servingErrs []error
	servingN    int
	subs        chan fakeSub
}

func (f *fakeEvents) IsServing(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.servingN++
	if len(f.servingErrs) > 0 {
		err := f.servingErrs[0]
		f.servingErrs = f.servingErrs[1:]
		return false, err
	}
	return true, nil
}

func (f *fakeEvents) Subscribe(context.Context, ...string) (<-chan *events.Envelope, <-chan error) {
	s := fakeSub{envs: make(chan *events.Envelope, 4), errs: make(chan error, 1)}
	f.subs <- s
	return s.envs, s.errs
}

func (f *fakeEvents) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.servingN
}

func exitEnvelope(t *testing.T, id, containerID string) *events.Envelope {
	t.Helper()
	a, err := typeurl.MarshalAny(&apievents.TaskExit{ContainerID: containerID, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return &events.Envelope{Topic: "/tasks/exit", Namespace: Namespace, Event: a}
}

func TestWatchExitsResubscribesWithBackoffAndAsksForRelist(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	src := &fakeEvents{subs: make(chan fakeSub, 4)}
	w := &ExitWatcher{events: src, logger: slog.New(slog.DiscardHandler), clock: fc}
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- w.WatchExits(ctx, func(id string) { got <- id }) }()

	next := func(what string) string {
		t.Helper()
		select {
		case id := <-got:
			return id
		case <-time.After(5 * time.Second):
			t.Fatalf("no report: want %s", what)
			return ""
		}
	}
	sub := <-src.subs
	sub.envs <- exitEnvelope(t, "exec-1", "c1") // an exec'd process: not reported
	sub.envs <- exitEnvelope(t, "c1", "c1")
	if id := next("c1"); id != "c1" {
		t.Fatalf("reported %q, want c1", id)
	}

	// containerd goes away: the stream breaks and it does not answer twice.
	down := errors.New("connection refused")
	src.mu.Lock()
	src.servingErrs = []error{down, down}
	src.mu.Unlock()
	sub.errs <- errors.New("transport is closing")
	for i, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		waitTimer(t, fc)
		before := src.calls()
		fc.Step(d - time.Millisecond)
		if !fc.HasWaiters() || src.calls() != before {
			t.Fatalf("retry %d earlier than %v", i, d)
		}
		fc.Step(time.Millisecond)
	}
	sub = <-src.subs
	if id := next(`"" (relist: exits may have been missed)`); id != "" {
		t.Fatalf("after resubscribing reported %q, want \"\"", id)
	}
	if n := src.calls(); n != 4 {
		t.Errorf("IsServing called %d times, want 4", n)
	}
	sub.envs <- exitEnvelope(t, "c2", "c2")
	if id := next("c2"); id != "c2" {
		t.Fatalf("reported %q, want c2", id)
	}
	cancel()
	if err := <-ended; err != nil {
		t.Errorf("WatchExits = %v, want nil after cancel", err)
	}
	select {
	case id := <-got:
		t.Errorf("unexpected report %q", id)
	default:
	}
}

// waitTimer blocks until the watcher waits on the fake clock.
func waitTimer(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("nothing waits for a back-off")
		}
		time.Sleep(time.Millisecond)
	}
}
