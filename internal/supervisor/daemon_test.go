package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
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

// fakeStarter starts fakeProcs in place of children; errs are the results
// of the next starts (nil: success).
type fakeStarter struct {
	mu       sync.Mutex
	errs     []error
	n        int
	args     []string
	exitErr  error          // non-nil: children exit at once with it
	launched chan *fakeProc // every successful start, in order
}

func newFakeStarter() *fakeStarter { return &fakeStarter{launched: make(chan *fakeProc, 16)} }

func (f *fakeStarter) start(_ string, args, _ []string, _, _ string) (Process, error) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.args = args
	var err error
	if len(f.errs) > 0 {
		err, f.errs = f.errs[0], f.errs[1:]
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p := newFakeProc(100 + n)
	if f.exitErr != nil {
		p.exit(f.exitErr)
	}
	f.launched <- p
	return p, nil
}

func (f *fakeStarter) failNext(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, errs...)
}

func (f *fakeStarter) starts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

var testPolicy = Policy{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute}

// testSpec is a daemon "d" under dir that is ready at once.
func testSpec(dir string) Spec {
	return Spec{
		Name: "d", Binary: "/bin/d", Args: []string{"--root", dir},
		LogFile: filepath.Join(dir, "d.log"), PidFile: filepath.Join(dir, "d.pid"), Marker: "--no-such-marker",
		Ready: func(context.Context) error { return nil }, Target: "at d.sock",
		Policy: testPolicy, Logger: slog.New(slog.DiscardHandler),
	}
}

func newTestDaemon(s Spec, f *fakeStarter) *Daemon {
	d := NewDaemon(s)
	d.start = f.start
	return d
}

// newSupervised starts a daemon on fake children and a fake clock.
func newSupervised(t *testing.T) (*Daemon, *fakeStarter, *clocktesting.FakeClock) {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := testSpec(t.TempDir())
	s.Clock = fc
	f := newFakeStarter()
	d := newTestDaemon(s, f)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	return d, f, fc
}

// nextLaunch returns the next started process, failing after a (real)
// timeout.
func nextLaunch(t *testing.T, f *fakeStarter) *fakeProc {
	t.Helper()
	select {
	case p := <-f.launched:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no launch")
		return nil
	}
}

func noLaunch(t *testing.T, f *fakeStarter) {
	t.Helper()
	select {
	case p := <-f.launched:
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
func waitPid(t *testing.T, d *Daemon, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for d.Pid() != pid {
		if time.Now().After(deadline) {
			t.Fatalf("supervisor did not take over pid %d (Pid() = %d)", pid, d.Pid())
		}
		time.Sleep(time.Millisecond)
	}
}

// expectRestartAfter checks that the supervisor starts the child again
// exactly after d of back-off (on the fake clock), not earlier.
func expectRestartAfter(t *testing.T, f *fakeStarter, fc *clocktesting.FakeClock, d time.Duration) *fakeProc {
	t.Helper()
	waitTimer(t, fc)
	fc.Step(d - time.Millisecond)
	noLaunch(t, f)
	if !fc.HasWaiters() {
		t.Fatalf("back-off shorter than %v", d)
	}
	fc.Step(time.Millisecond)
	return nextLaunch(t, f)
}

func TestDaemonRestartsWithBackoff(t *testing.T) {
	d, f, fc := newSupervised(t)
	p1 := nextLaunch(t, f)

	// kill -9: restarted after 1 s.
	p1.exit(errors.New("signal: killed"))
	p2 := expectRestartAfter(t, f, fc, time.Second)
	// Crashes again at once: 2 s; a failed start counts as one more: 4 s.
	f.failNext(errors.New("exec format error"))
	p2.exit(errors.New("exit status 1"))
	waitTimer(t, fc)
	fc.Step(2 * time.Second) // the failing attempt
	p3 := expectRestartAfter(t, f, fc, 4*time.Second)
	// After a stable run the back-off starts over. The run counts from
	// when the supervisor took p3 over, so wait for that before stepping.
	waitPid(t, d, p3.pid)
	fc.Step(testPolicy.ResetAfter)
	p3.exit(errors.New("signal: killed"))
	p4 := expectRestartAfter(t, f, fc, time.Second)
	waitPid(t, d, p4.pid)

	if n := f.starts(); n != 5 {
		t.Errorf("%d starts, want 5", n)
	}
	if d.Restarts() != 3 || d.Pid() != p4.pid {
		t.Errorf("Restarts() = %d, Pid() = %d; want 3, %d", d.Restarts(), d.Pid(), p4.pid)
	}
}

func TestDaemonStopEndsSupervisionFirst(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		d, f, _ := newSupervised(t)
		p1 := nextLaunch(t, f)
		if err := d.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := p1.signalled(); len(got) != 1 || got[0] != syscall.SIGTERM {
			t.Errorf("signals = %v, want [SIGTERM]", got)
		}
		assertEnded(t, d, f)
		if err := d.Stop(context.Background()); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
	t.Run("during back-off", func(t *testing.T) {
		d, f, fc := newSupervised(t)
		nextLaunch(t, f).exit(errors.New("signal: killed"))
		waitTimer(t, fc)
		if err := d.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		fc.Step(time.Hour)
		assertEnded(t, d, f)
	})
}

func assertEnded(t *testing.T, d *Daemon, f *fakeStarter) {
	t.Helper()
	select {
	case <-d.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	noLaunch(t, f)
	if n := f.starts(); n != 1 {
		t.Errorf("%d starts, want only the first", n)
	}
}

// A restart finds the pid file naming a live process with the marker (this
// test process stands in for another skiff's child): supervision ends.
func TestDaemonGivesWayToANewerChild(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := testSpec(t.TempDir())
	s.Clock, s.Marker = fc, os.Args[0]
	f := newFakeStarter()
	d := newTestDaemon(s, f)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	if err := os.WriteFile(s.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nextLaunch(t, f).exit(errors.New("signal: terminated"))
	waitTimer(t, fc)
	fc.Step(time.Second)
	select {
	case <-d.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("supervision goes on although another child serves")
	}
	if n := f.starts(); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
}

// A start writes the pid file and logs the child with its attributes.
func TestDaemonStartWritesPidFileAndLogs(t *testing.T) {
	var logs bytes.Buffer
	s := testSpec(t.TempDir())
	s.Name, s.StartedAttrs = "skiff-apiserver", []any{"dataDir", "/d"}
	s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	f := newFakeStarter()
	d := newTestDaemon(s, f)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	if b, err := os.ReadFile(s.PidFile); err != nil || string(b) != "101\n" {
		t.Errorf("pid file %q, %v; want 101", b, err)
	}
	if d.Pid() != 101 || !slices.Equal(f.args, s.Args) {
		t.Errorf("Pid() = %d, args %q", d.Pid(), f.args)
	}
	want := `msg="started skiff-apiserver" pid=101 dataDir=/d log=` + s.LogFile
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log %q lacks %q", logs.String(), want)
	}
}

// A start that fails after the child started stops the child and says why;
// the hooks run in order.
func TestDaemonStartFailures(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		prepare    error
		ready      error
		exits      bool // the child exits at once
		afterReady error
		wantErr    string
		wantStarts int
	}{
		{name: "prepare fails", prepare: boom, wantErr: "boom", wantStarts: 0},
		{name: "exits during start", ready: boom, exits: true, wantErr: "d exited during start (exit status 3); log ", wantStarts: 1},
		{name: "never ready", ready: boom, wantErr: "d at d.sock not ready: context deadline exceeded (last error: boom); log ", wantStarts: 1},
		{name: "after ready fails", afterReady: boom, wantErr: "boom", wantStarts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSpec(t.TempDir())
			if err := os.WriteFile(s.LogFile, []byte("first\nlast words\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s.Prepare = func() error { return tt.prepare }
			s.Ready = func(context.Context) error { return tt.ready }
			s.AfterReady = func(context.Context) error { return tt.afterReady }
			f := newFakeStarter()
			if tt.exits {
				f.exitErr = errors.New("exit status 3")
			}
			d := newTestDaemon(s, f)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := d.Start(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Start = %v, want %q", err, tt.wantErr)
			}
			if tt.wantStarts == 1 && !strings.Contains(err.Error(), "ends with:\nfirst\nlast words") && tt.afterReady == nil {
				t.Errorf("error %q does not quote the log", err)
			}
			if n := f.starts(); n != tt.wantStarts {
				t.Fatalf("%d starts, want %d", n, tt.wantStarts)
			}
			if tt.wantStarts == 1 && !tt.exits {
				p := nextLaunch(t, f)
				if got := p.signalled(); len(got) != 1 || got[0] != syscall.SIGTERM {
					t.Errorf("rollback signals = %v, want [SIGTERM]", got)
				}
			}
			if err := d.Stop(context.Background()); err != nil {
				t.Errorf("Stop after a failed Start: %v", err)
			}
		})
	}
}

// StopLeftover stops nothing that is not ours and removes a stale pid
// file.
func TestDaemonStopLeftover(t *testing.T) {
	s := testSpec(t.TempDir())
	// This test process is alive but lacks the marker.
	if err := os.WriteFile(s.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewDaemon(s).StopLeftover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.PidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale pid file kept: %v", err)
	}
}

func TestLeftoverPid(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "d.pid")
	own := strconv.Itoa(os.Getpid()) + "\n"
	tests := []struct {
		name, content, marker string
		want                  bool
	}{
		{"no pid file", "", "m", false},
		{"garbage", "abc\n", "m", false},
		{"dead pid", "999999999\n", "m", false},
		// Our own test process is alive but lacks the marker: a reused pid
		// must not be killed.
		{"unrelated live process", own, "--no-such-marker", false},
		{"our process", own, os.Args[0], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(pidFile)
			if tt.content != "" {
				if err := os.WriteFile(pidFile, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pid, ok := LeftoverPid(pidFile, tt.marker)
			if ok != tt.want || (ok && pid != os.Getpid()) {
				t.Fatalf("LeftoverPid = %d, %t; want %t", pid, ok, tt.want)
			}
		})
	}
}
