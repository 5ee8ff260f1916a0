package systemd

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeAgent is an Agent whose state the test sets.
type fakeAgent struct {
	ready chan struct{}

	mu             sync.Mutex
	heartbeat      time.Time
	running, total int
}

func newFakeAgent() *fakeAgent { return &fakeAgent{ready: make(chan struct{})} }

func (f *fakeAgent) SourcesReady() <-chan struct{} { return f.ready }

func (f *fakeAgent) Heartbeat() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heartbeat
}

func (f *fakeAgent) PodCounts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running, f.total
}

func (f *fakeAgent) set(beat time.Time, running, total int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heartbeat, f.running, f.total = beat, running, total
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// The decisions of one Run, step by step on a fake timeline: READY=1 only
// once the sources listed (or ReadyTimeout passed), STATUS= only when it
// changed, WATCHDOG=1 only while the heartbeat is fresher than Stale.
func TestNextMessages(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		at           time.Duration // since t0
		sourcesReady bool
		beat         time.Duration // since t0; the heartbeat
		running      int
		total        int
		want         string
	}
	starting := "STATUS=Starting: waiting for the first list of every pod source"
	tests := []struct {
		name     string
		watchdog time.Duration
		steps    []step
	}{
		{"ready only after the sources listed", 0, []step{
			{at: 0, want: starting},
			{at: 5 * time.Second, want: ""},
			{at: 6 * time.Second, sourcesReady: true, running: 0, total: 3, want: "READY=1\nSTATUS=0/3 pods running"},
			{at: 10 * time.Second, sourcesReady: true, running: 0, total: 3, want: ""},
			{at: 15 * time.Second, sourcesReady: true, running: 2, total: 3, want: "STATUS=2/3 pods running"},
		}},
		{"ready after ReadyTimeout without every source", 0, []step{
			{at: 0, want: starting},
			{at: DefaultReadyTimeout - time.Second, want: ""},
			{at: DefaultReadyTimeout, running: 1, total: 1,
				want: "READY=1\nSTATUS=1/1 pods running; not every pod source has listed its pods after 2m0s (API server unreachable?)"},
			{at: DefaultReadyTimeout + time.Minute, sourcesReady: true, running: 1, total: 1, want: "STATUS=1/1 pods running"},
		}},
		{"watchdog pings stop while the loop is stuck", 20 * time.Second, []step{
			{at: 0, want: starting},
			{at: time.Second, sourcesReady: true, want: "READY=1\nWATCHDOG=1\nSTATUS=0/0 pods running"},
			{at: 11 * time.Second, sourcesReady: true, beat: 10 * time.Second, want: "WATCHDOG=1"},
			{at: 69 * time.Second, sourcesReady: true, beat: 10 * time.Second, want: "WATCHDOG=1"},
			{at: 70 * time.Second, sourcesReady: true, beat: 10 * time.Second,
				want: "STATUS=Sync loop stuck since 1970-01-01T00:16:50Z; 0/0 pods running"},
			{at: 80 * time.Second, sourcesReady: true, beat: 10 * time.Second, want: ""},
			{at: 90 * time.Second, sourcesReady: true, beat: 89 * time.Second, want: "WATCHDOG=1\nSTATUS=0/0 pods running"},
		}},
		{"a heartbeat older than READY counts from READY", 20 * time.Second, []step{
			{at: 100 * time.Second, sourcesReady: true, beat: 0, want: "READY=1\nWATCHDOG=1\nSTATUS=0/0 pods running"},
			{at: 159 * time.Second, sourcesReady: true, beat: 0, want: "WATCHDOG=1"},
			{at: 160 * time.Second, sourcesReady: true, beat: 0, want: "STATUS=Sync loop stuck since 1970-01-01T00:18:20Z; 0/0 pods running"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fa := newFakeAgent()
			cfg := &Config{Agent: fa, Watchdog: tt.watchdog, Stale: time.Minute, ReadyTimeout: DefaultReadyTimeout, Logger: discard}
			s := &state{cfg: cfg, start: t0}
			for i, st := range tt.steps {
				fa.set(t0.Add(st.beat), st.running, st.total)
				if got := s.next(t0.Add(st.at), st.sourcesReady); got != st.want {
					t.Errorf("step %d (at %s): message %q, want %q", i, st.at, got, st.want)
				}
			}
		})
	}
}

// listen is a fake NOTIFY_SOCKET: a unixgram socket in a temporary
// directory, set in the environment as systemd sets it.
func listen(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

// recv returns the next datagram, failing after a few seconds.
func recv(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no sd_notify message: %v", err)
	}
	return string(buf[:n])
}

func TestFromEnvUnsetsTheEnvironment(t *testing.T) {
	listen(t)
	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n, err := FromEnv()
	if err != nil || n == nil {
		t.Fatalf("FromEnv: %v, %v", n, err)
	}
	if n.Watchdog() != 3*time.Second {
		t.Errorf("Watchdog %s, want 3s", n.Watchdog())
	}
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		if got, ok := os.LookupEnv(v); ok {
			t.Errorf("%s=%q still set: children would inherit it", v, got)
		}
	}
}

func TestFromEnvWithoutSocketIsNoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n, err := FromEnv()
	if err != nil || n != nil {
		t.Fatalf("FromEnv without NOTIFY_SOCKET: %v, %v; want nil, nil", n, err)
	}
	if err := n.Notify("READY=1"); err != nil {
		t.Errorf("nil Notifier: %v", err)
	}
	if n.Watchdog() != 0 {
		t.Errorf("nil Notifier's Watchdog %s", n.Watchdog())
	}
}

func TestFromEnvWatchdogOfAnotherPid(t *testing.T) {
	listen(t)
	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	n, err := FromEnv()
	if err != nil || n.Watchdog() != 0 {
		t.Fatalf("FromEnv: watchdog %s, err %v; want 0 (meant for another process)", n.Watchdog(), err)
	}
}

// Run end to end through a fake NOTIFY_SOCKET and a fake clock: READY=1
// at once when the sources are ready, WATCHDOG=1 on ticks while the
// heartbeat is fresh, none while it is stale, STOPPING=1 at the end.
func TestRunNotifiesThroughTheSocket(t *testing.T) {
	sock := listen(t)
	n, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	fa := newFakeAgent()
	fa.set(clk.Now(), 1, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Sender: n, Agent: fa, Watchdog: 2 * time.Second, Stale: 10 * time.Second, Clock: clk, Logger: discard})
	}()
	defer func() { cancel(); <-done }()

	if got := recv(t, sock); strings.Contains(got, "READY=1") || !strings.HasPrefix(got, "STATUS=Starting") {
		t.Fatalf("first message %q: want a starting STATUS and no READY=1", got)
	}
	close(fa.ready)
	if got, want := recv(t, sock), "READY=1\nWATCHDOG=1\nSTATUS=1/2 pods running"; got != want {
		t.Fatalf("after the sources listed: %q, want %q", got, want)
	}
	for range 2 {
		clk.Step(time.Second)
		fa.set(clk.Now(), 1, 2)
		if got := recv(t, sock); got != "WATCHDOG=1" {
			t.Fatalf("tick with a fresh heartbeat: %q, want WATCHDOG=1", got)
		}
	}
	clk.Step(10 * time.Second) // the heartbeat is 10 s old: stuck
	if got := recv(t, sock); strings.Contains(got, "WATCHDOG=1") || !strings.Contains(got, "STATUS=Sync loop stuck") {
		t.Fatalf("tick with a stale heartbeat: %q, want a stuck STATUS and no WATCHDOG=1", got)
	}
	clk.Step(time.Second)
	fa.set(clk.Now(), 2, 2)
	if got, want := recv(t, sock), "WATCHDOG=1\nSTATUS=2/2 pods running"; got != want {
		t.Fatalf("after the loop turned again: %q, want %q", got, want)
	}
	cancel()
	<-done
	if got := recv(t, sock); !strings.HasPrefix(got, "STOPPING=1\n") {
		t.Fatalf("at shutdown: %q, want STOPPING=1", got)
	}
}
