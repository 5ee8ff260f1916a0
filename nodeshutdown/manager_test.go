package nodeshutdown

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/clocktest"
)

// fakeLogind is a Logind in memory: one lock at most, signals sent by the
// test.
type fakeLogind struct {
	mu sync.Mutex
	// delay is InhibitDelayMax; afterOverride what it becomes after an
	// override (0: the value asked for).
	delay, afterOverride time.Duration
	overrides            []time.Duration
	inhibits, released   int
	events               chan bool
}

type fakeLock struct {
	l    *fakeLogind
	once sync.Once
}

func (k *fakeLock) Close() error {
	k.once.Do(func() {
		k.l.mu.Lock()
		k.l.released++
		k.l.mu.Unlock()
	})
	return nil
}

func newFakeLogind(delay time.Duration) *fakeLogind {
	return &fakeLogind{delay: delay, events: make(chan bool)}
}

func (l *fakeLogind) InhibitDelayMax(context.Context) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay, nil
}

func (l *fakeLogind) OverrideInhibitDelayMax(_ context.Context, d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.overrides = append(l.overrides, d)
	l.delay = d
	if l.afterOverride != 0 {
		l.delay = l.afterOverride
	}
	return nil
}

func (l *fakeLogind) Inhibit(context.Context) (io.Closer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inhibits++
	return &fakeLock{l: l}, nil
}

func (l *fakeLogind) PrepareForShutdown(ctx context.Context) (<-chan bool, error) {
	out := make(chan bool)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case v := <-l.events:
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (l *fakeLogind) Close() error { return nil }

// held is the number of locks held now.
func (l *fakeLogind) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inhibits - l.released
}

// fakePods records TerminatePod calls; a pod stops when the test says so
// (or at once when auto).
type fakePods struct {
	mu    sync.Mutex
	pods  []*v1.Pod
	auto  bool
	calls []string
	opts  map[types.UID]TerminateOptions
	done  map[types.UID]chan struct{}
}

func (p *fakePods) ActivePods() []*v1.Pod { return p.pods }

func (p *fakePods) TerminatePod(uid types.UID, o TerminateOptions) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, string(uid))
	p.opts[uid] = o
	ch := make(chan struct{})
	p.done[uid] = ch
	if p.auto {
		close(ch)
	}
	return ch
}

func (p *fakePods) stop(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.done[uid])
}

func (p *fakePods) called() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.calls, ",")
}

type mgrHarness struct {
	t      *testing.T
	m      *Manager
	l      *fakeLogind
	pods   *fakePods
	clock  *clocktest.Clock
	logs   *bytes.Buffer
	events []string
	times  int
	cancel context.CancelFunc
	done   chan error
}

func startManager(t *testing.T, c Config, l *fakeLogind, pods *fakePods, connectErr error) *mgrHarness {
	t.Helper()
	h := &mgrHarness{t: t, l: l, pods: pods, clock: clocktest.New(time.Unix(1000, 0)), logs: &bytes.Buffer{}, done: make(chan error, 1)}
	var mu sync.Mutex
	h.m = New(Options{
		Config: c,
		Connect: func(context.Context) (Logind, error) {
			if connectErr != nil {
				return nil, connectErr
			}
			return l, nil
		},
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: h.logs}, nil)),
		Clock:  h.clock,
		Event: func(_, reason, msg string) {
			mu.Lock()
			h.events = append(h.events, reason+": "+msg)
			mu.Unlock()
		},
		Times: func(start, end time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			if !end.IsZero() {
				h.times++
			}
			return nil
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.m.Run(ctx, pods) }()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Error(err)
		}
	})
	return h
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// eventually polls cond; the deadline only guards against hangs.
func (h *mgrHarness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s (calls %q)", what, h.pods.called())
		}
		time.Sleep(time.Millisecond)
	}
}

func newPods(auto bool, pods ...*v1.Pod) *fakePods {
	return &fakePods{pods: pods, auto: auto, opts: map[types.UID]TerminateOptions{}, done: map[types.UID]chan struct{}{}}
}

var thirtyTen = Config{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second}

func TestManagerRaisesInhibitDelayAndTakesLock_H17(t *testing.T) {
	l := newFakeLogind(5 * time.Second) // logind's default
	h := startManager(t, thirtyTen, l, newPods(true), nil)
	h.eventually("lock taken", func() bool { return l.held() == 1 })
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.overrides) != 1 || l.overrides[0] != 30*time.Second {
		t.Errorf("overrides %v, want [30s]", l.overrides)
	}
}

func TestManagerKeepsLongerInhibitDelay_H17(t *testing.T) {
	l := newFakeLogind(time.Minute)
	h := startManager(t, thirtyTen, l, newPods(true), nil)
	h.eventually("lock taken", func() bool { return l.held() == 1 })
	if len(l.overrides) != 0 {
		t.Errorf("overrides %v, want none", l.overrides)
	}
}

func TestManagerShutdownStopsRegularThenCritical_H17_H18(t *testing.T) {
	l := newFakeLogind(time.Minute)
	pods := newPods(false, pod("crit", i32(SystemCriticalPriority), i64(30)), pod("app", nil, i64(30)))
	h := startManager(t, thirtyTen, l, pods, nil)
	h.eventually("lock taken", func() bool { return l.held() == 1 })
	if ok, _, _ := h.m.Admit(nil); !ok {
		t.Fatal("pod refused before any shutdown")
	}
	l.events <- true
	h.eventually("regular pod stopped", func() bool { return pods.called() == "uid-app" })
	if !h.m.ShuttingDown() || !errors.Is(h.m.Status(), ErrShuttingDown) {
		t.Error("not shutting down after PrepareForShutdown(true)")
	}
	if ok, reason, msg := h.m.Admit(nil); ok || reason != "NodeShutdown" || msg != "Pod was rejected as the node is shutting down." {
		t.Errorf("Admit while shutting down = %v %q %q", ok, reason, msg)
	}
	o := pods.opts["uid-app"]
	want := TerminateOptions{GracePeriodSeconds: 20, Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown.",
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet",
			Message: "Pod was terminated in response to imminent node shutdown."}}}
	if o.GracePeriodSeconds != want.GracePeriodSeconds || o.Reason != want.Reason || o.Message != want.Message ||
		len(o.Conditions) != 1 || o.Conditions[0] != want.Conditions[0] {
		t.Errorf("options %+v\nwant %+v", o, want)
	}
	if l.held() != 1 {
		t.Error("lock released before the pods stopped")
	}
	pods.stop("uid-app")
	h.eventually("critical pod stopped", func() bool { return pods.called() == "uid-app,uid-crit" })
	if g := pods.opts["uid-crit"].GracePeriodSeconds; g != 10 {
		t.Errorf("critical pod grace %d, want 10", g)
	}
	pods.stop("uid-crit")
	h.eventually("lock released", func() bool { return l.held() == 0 })
	if h.events[0] != "NodeShutdown: Shutdown manager detected shutdown event" || h.times != 1 {
		t.Errorf("events %q, times recorded %d", h.events, h.times)
	}
}

func TestManagerGroupBudgetRunsOut_H18(t *testing.T) {
	l := newFakeLogind(time.Minute)
	pods := newPods(false, pod("crit", i32(SystemCriticalPriority), nil), pod("stuck", nil, nil))
	h := startManager(t, thirtyTen, l, pods, nil)
	h.eventually("lock taken", func() bool { return l.held() == 1 })
	l.events <- true
	h.eventually("regular pod stopped", func() bool { return pods.called() == "uid-stuck" })
	// The manager waits for the regular budget and nothing sooner: a
	// step short of it can wake nothing (and nothing ran at the step).
	h.eventually("budget timer", h.clock.HasWaiters)
	if next, ok := h.clock.NextIn(); !ok || next != 20*time.Second {
		t.Fatalf("the manager's next wake-up in %v (any: %t), want the regular budget 20s", next, ok)
	}
	h.clock.Step(19 * time.Second)
	if got := pods.called(); got != "uid-stuck" {
		t.Fatalf("calls %q before the regular budget (20s) ran out", got)
	}
	h.clock.Step(time.Second)
	h.eventually("critical pod stopped after 20s", func() bool { return pods.called() == "uid-stuck,uid-crit" })
	h.eventually("critical budget timer", h.clock.HasWaiters)
	h.clock.Step(10 * time.Second)
	h.eventually("lock released", func() bool { return l.held() == 0 })
}

func TestManagerCancelledShutdownTakesLockAgain_H17(t *testing.T) {
	l := newFakeLogind(time.Minute)
	pods := newPods(true, pod("app", nil, nil))
	h := startManager(t, thirtyTen, l, pods, nil)
	h.eventually("lock taken", func() bool { return l.held() == 1 })
	l.events <- true
	h.eventually("lock released", func() bool { return l.held() == 0 })
	l.events <- false
	h.eventually("lock taken again", func() bool { return l.held() == 1 })
	if h.m.ShuttingDown() {
		t.Error("still shutting down after PrepareForShutdown(false)")
	}
	if ok, _, _ := h.m.Admit(nil); !ok {
		t.Error("pods refused after the cancellation")
	}
}

func TestManagerWithoutLogindRunsWithout_H17(t *testing.T) {
	l := newFakeLogind(time.Minute)
	h := startManager(t, thirtyTen, l, newPods(true), errors.New("no system bus"))
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return without logind")
	}
	if !strings.Contains(h.logs.String(), "level=INFO msg=\"graceful node shutdown unavailable") {
		t.Errorf("logs:\n%s", h.logs)
	}
	if ok, _, _ := h.m.Admit(nil); !ok {
		t.Error("pods refused without logind")
	}
}

func TestManagerOffWithoutConfig_H18(t *testing.T) {
	l := newFakeLogind(time.Minute)
	h := startManager(t, Config{}, l, newPods(true), nil)
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.done <- nil
	if l.inhibits != 0 {
		t.Error("lock taken with graceful shutdown off")
	}
}

func TestManagerOverrideIgnoredIsAnError_H17(t *testing.T) {
	l := newFakeLogind(5 * time.Second)
	l.afterOverride = 5 * time.Second // e.g. a later drop-in wins
	h := startManager(t, thirtyTen, l, newPods(true), nil)
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.done <- nil
	if !strings.Contains(h.logs.String(), "InhibitDelayMaxSec is 5s after the override, less than the shutdown grace period 30s") {
		t.Errorf("logs:\n%s", h.logs)
	}
	if l.inhibits != 0 {
		t.Error("lock taken though logind would not wait long enough")
	}
}

func TestManagerReleasesLockWhenStopped_H17(t *testing.T) {
	l := newFakeLogind(time.Minute)
	h := startManager(t, thirtyTen, l, newPods(true), nil)
	h.eventually("lock taken", func() bool { return l.held() == 1 })
	h.cancel()
	h.eventually("lock released", func() bool { return l.held() == 0 })
}

// dropping is a fakeLogind whose signal channel the test can close, as a
// lost D-Bus connection does.
type dropping struct {
	*fakeLogind
	drop       chan struct{}
	subscribed int
}

func (d *dropping) PrepareForShutdown(ctx context.Context) (<-chan bool, error) {
	d.mu.Lock()
	drop := d.drop
	d.subscribed++
	d.mu.Unlock()
	out := make(chan bool)
	go func() {
		defer close(out)
		select {
		case <-ctx.Done():
		case <-drop:
		}
	}()
	return out, nil
}

func TestManagerReconnectsAfterLostConnection_H17(t *testing.T) {
	d := &dropping{fakeLogind: newFakeLogind(time.Minute), drop: make(chan struct{})}
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var mu sync.Mutex
	connects := 0
	m := New(Options{Config: thirtyTen, Clock: clock, Connect: func(context.Context) (Logind, error) {
		mu.Lock()
		defer mu.Unlock()
		connects++
		return d, nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, newPods(true)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	h := &mgrHarness{t: t, pods: newPods(true)}
	h.eventually("watching", func() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.subscribed == 1 })
	d.mu.Lock()
	close(d.drop)
	d.drop = make(chan struct{})
	d.mu.Unlock()
	h.eventually("lock released on the lost connection", func() bool { return d.held() == 0 })
	h.eventually("reconnect timer", clock.HasWaiters)
	clock.Step(reconnectPeriod)
	h.eventually("lock taken again", func() bool { return d.held() == 1 })
	mu.Lock()
	defer mu.Unlock()
	if connects != 2 {
		t.Errorf("connected %d times, want 2", connects)
	}
}
