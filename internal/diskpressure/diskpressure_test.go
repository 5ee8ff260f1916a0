package diskpressure

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestCrossed(t *testing.T) {
	for _, tc := range []struct {
		name, signal string
		u            Usage
		want         string
	}{
		{"plenty", "nodefs", Usage{Bytes: 100, BytesAvailable: 50, Inodes: 100, InodesFree: 50}, ""},
		{"nodefs at 10% is fine", "nodefs", Usage{Bytes: 100, BytesAvailable: 10, Inodes: 100, InodesFree: 50}, ""},
		{"nodefs under 10%", "nodefs", Usage{Bytes: 1000, BytesAvailable: 31, Inodes: 100, InodesFree: 50}, "nodefs.available 3.1% < 10%"},
		{"imagefs under 15%", "imagefs", Usage{Bytes: 100, BytesAvailable: 14, Inodes: 100, InodesFree: 50}, "imagefs.available 14.0% < 15%"},
		{"nodefs 14% is fine", "nodefs", Usage{Bytes: 100, BytesAvailable: 14, Inodes: 100, InodesFree: 50}, ""},
		{"full", "nodefs", Usage{Bytes: 100, Inodes: 100, InodesFree: 50}, "nodefs.available 0.0% < 10%"},
		{"inodes", "nodefs", Usage{Bytes: 100, BytesAvailable: 50, Inodes: 1000, InodesFree: 10}, "nodefs.inodesFree 1.0% < 5%"},
		{"no inode accounting", "nodefs", Usage{Bytes: 100, BytesAvailable: 50}, ""},
		{"empty", "nodefs", Usage{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Crossed(tc.signal, tc.u); got != tc.want {
				t.Errorf("Crossed = %q, want %q", got, tc.want)
			}
		})
	}
}

// fakeFS serves usages by directory.
type fakeFS struct {
	mu    sync.Mutex
	u     map[string]Usage
	reads int
}

func (f *fakeFS) readCount() int { f.mu.Lock(); defer f.mu.Unlock(); return f.reads }

func (f *fakeFS) set(dir string, u Usage) { f.mu.Lock(); f.u[dir] = u; f.mu.Unlock() }

func (f *fakeFS) statfs(dir string) (Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	u, ok := f.u[dir]
	if !ok {
		return Usage{}, errors.New("no such dir")
	}
	return u, nil
}

var (
	roomy = Usage{Bytes: 100, BytesAvailable: 60, Inodes: 100, InodesFree: 60}
	full  = Usage{Bytes: 100, BytesAvailable: 1, Inodes: 100, InodesFree: 60}
)

// TestMonitor: pressure follows the paths; entering it records one event
// naming the threshold and the directory, staying or leaving records none;
// an unreadable path is skipped.
func TestMonitor(t *testing.T) {
	fs := &fakeFS{u: map[string]Usage{"/root": roomy, "/logs": roomy}}
	var events []string
	m := New(Config{Paths: []Path{{"nodefs", "/root"}, {"nodefs", "/logs"}, {"imagefs", "/missing"}}, Statfs: fs.statfs,
		Event: func(typ, reason, msg string) { events = append(events, typ+" "+reason+" "+msg) }})
	steps := []struct {
		logs    Usage
		want    string
		nEvents int
	}{
		{roomy, "", 0},
		{full, "nodefs.available 1.0% < 10% (/logs)", 1},
		{full, "nodefs.available 1.0% < 10% (/logs)", 1},
		{roomy, "", 1},
		{full, "nodefs.available 1.0% < 10% (/logs)", 2},
	}
	for i, s := range steps {
		fs.set("/logs", s.logs)
		m.Check()
		if got := m.Pressure(); got != s.want || len(events) != s.nEvents {
			t.Fatalf("step %d: Pressure %q with %d events, want %q with %d", i, got, len(events), s.want, s.nEvents)
		}
	}
	if want := "Warning EvictionThresholdMet Node has DiskPressure: nodefs.available 1.0% < 10% (/logs)"; events[0] != want {
		t.Errorf("event %q, want %q", events[0], want)
	}
}

// TestMonitorRunChecksEveryInterval: Run checks at once and at each tick.
func TestMonitorRunChecksEveryInterval(t *testing.T) {
	fs := &fakeFS{u: map[string]Usage{"/root": roomy}}
	clk := clocktesting.NewFakeClock(time.Now())
	m := New(Config{Paths: []Path{{"nodefs", "/root"}}, Statfs: fs.statfs, Clock: clk})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !clk.HasWaiters() || fs.readCount() == 0 { // the first check is done
		time.Sleep(time.Millisecond)
	}
	fs.set("/root", full)
	clk.Step(Interval)
	deadline := time.Now().Add(5 * time.Second)
	for m.Pressure() == "" {
		if time.Now().After(deadline) {
			t.Fatal("no pressure after a tick")
		}
		time.Sleep(time.Millisecond)
	}
}
