package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/supervisor"
)

// fakeProc is a process that exits when told to or when signalled.
type fakeProc struct {
	pid    int
	exited chan struct{}
	once   sync.Once
	err    error

	mu      sync.Mutex
	signals []syscall.Signal
}

func newFakeProc(pid int) *fakeProc { return &fakeProc{pid: pid, exited: make(chan struct{})} }

func (p *fakeProc) exit(err error) {
	p.once.Do(func() { p.err = err; close(p.exited) })
}

func (p *fakeProc) Pid() int                { return p.pid }
func (p *fakeProc) Exited() <-chan struct{} { return p.exited }
func (p *fakeProc) ExitErr() error          { return p.err }
func (p *fakeProc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	p.signals = append(p.signals, sig)
	p.mu.Unlock()
	p.exit(fmt.Errorf("signal: %v", sig))
	return nil
}

func (p *fakeProc) signalled() []syscall.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]syscall.Signal(nil), p.signals...)
}

// fakeLauncher starts fakeProcs; errs are the results of the next calls
// (nil: success).
type fakeLauncher struct {
	mu       sync.Mutex
	errs     []error
	restarts []bool
	launched chan *fakeProc // every successful launch, in order
}

func (l *fakeLauncher) launch(_ context.Context, restart bool) (supervisor.Process, error) {
	l.mu.Lock()
	l.restarts = append(l.restarts, restart)
	n := len(l.restarts)
	var err error
	if len(l.errs) > 0 {
		err, l.errs = l.errs[0], l.errs[1:]
	}
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p := newFakeProc(100 + n)
	l.launched <- p
	return p, nil
}

func (l *fakeLauncher) failNext(errs ...error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, errs...)
}

func (l *fakeLauncher) calls() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.restarts...)
}

func newSupervised(t *testing.T) (*Managed, *fakeLauncher, *clocktesting.FakeClock) {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := &fakeLauncher{launched: make(chan *fakeProc, 16)}
	m := &Managed{logger: slog.New(slog.DiscardHandler), clock: fc, launch: l.launch, done: make(chan struct{})}
	if err := m.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return m, l, fc
}

// nextLaunch returns the next launched process, failing after a (real)
// timeout.
func nextLaunch(t *testing.T, l *fakeLauncher) *fakeProc {
	t.Helper()
	select {
	case p := <-l.launched:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no launch")
		return nil
	}
}

func noLaunch(t *testing.T, l *fakeLauncher) {
	t.Helper()
	select {
	case p := <-l.launched:
		t.Fatalf("unexpected launch of pid %d", p.pid)
	default:
	}
}

// waitTimer blocks until the supervisor waits on the fake clock.
func waitTimer(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("supervisor does not wait for a back-off")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitPid blocks until the supervisor has taken over the process pid.
func waitPid(t *testing.T, m *Managed, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for m.Pid() != pid {
		if time.Now().After(deadline) {
			t.Fatalf("supervisor did not take over pid %d (Pid() = %d)", pid, m.Pid())
		}
		time.Sleep(time.Millisecond)
	}
}

// expectRestartAfter checks that the supervisor starts containerd again
// exactly after d of back-off (on the fake clock), not earlier.
func expectRestartAfter(t *testing.T, l *fakeLauncher, fc *clocktesting.FakeClock, d time.Duration) *fakeProc {
	t.Helper()
	waitTimer(t, fc)
	fc.Step(d - time.Millisecond)
	noLaunch(t, l)
	if !fc.HasWaiters() {
		t.Fatalf("back-off shorter than %v", d)
	}
	fc.Step(time.Millisecond)
	return nextLaunch(t, l)
}

func TestSuperviseRestartsWithBackoff(t *testing.T) {
	m, l, fc := newSupervised(t)
	p1 := nextLaunch(t, l)

	// kill -9: restarted after 1 s.
	p1.exit(errors.New("signal: killed"))
	p2 := expectRestartAfter(t, l, fc, time.Second)
	// Crashes again at once: 2 s; a failed start counts as one more: 4 s.
	l.failNext(errors.New("containerd exited during start"))
	p2.exit(errors.New("exit status 1"))
	waitTimer(t, fc)
	fc.Step(2 * time.Second) // the failing attempt
	p3 := expectRestartAfter(t, l, fc, 4*time.Second)
	// After a stable run the back-off starts over. The run counts from
	// when the supervisor took p3 over, so wait for that before stepping.
	waitPid(t, m, p3.pid)
	fc.Step(restartPolicy.ResetAfter)
	p3.exit(errors.New("signal: killed"))
	p4 := expectRestartAfter(t, l, fc, time.Second)
	waitPid(t, m, p4.pid)

	if got, want := fmt.Sprint(l.calls()), "[false true true true true]"; got != want {
		t.Errorf("launch restart flags = %s, want %s (only the first is a fresh start)", got, want)
	}
	if m.Restarts() != 3 || m.Pid() != p4.pid {
		t.Errorf("Restarts() = %d, Pid() = %d; want 3, %d", m.Restarts(), m.Pid(), p4.pid)
	}
}

func TestStopEndsSupervisionFirst(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		m, l, _ := newSupervised(t)
		p1 := nextLaunch(t, l)
		if err := m.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := p1.signalled(); len(got) != 1 || got[0] != syscall.SIGTERM {
			t.Errorf("signals = %v, want [SIGTERM]", got)
		}
		assertEnded(t, m, l)
		if err := m.Stop(context.Background()); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
	t.Run("during back-off", func(t *testing.T) {
		m, l, fc := newSupervised(t)
		nextLaunch(t, l).exit(errors.New("signal: killed"))
		waitTimer(t, fc)
		if err := m.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		fc.Step(time.Hour)
		assertEnded(t, m, l)
	})
}

func assertEnded(t *testing.T, m *Managed, l *fakeLauncher) {
	t.Helper()
	select {
	case <-m.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	noLaunch(t, l)
	if n := len(l.calls()); n != 1 {
		t.Errorf("%d launches, want only the first", n)
	}
}

func TestSuperviseGivesWayToANewerContainerd(t *testing.T) {
	m, l, fc := newSupervised(t)
	l.failNext(fmt.Errorf("%w (pid 4242)", supervisor.ErrReplaced))
	nextLaunch(t, l).exit(errors.New("signal: terminated"))
	waitTimer(t, fc)
	fc.Step(time.Second)
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("supervision goes on although another containerd serves the root")
	}
	if n := len(l.calls()); n != 2 {
		t.Errorf("%d launches, want 2", n)
	}
}
