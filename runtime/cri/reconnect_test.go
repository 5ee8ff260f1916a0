package cri

import (
	"context"
	"math"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// worstDelay is the longest wait before dial retries+1 under c, by gRPC's
// connection back-off (doc/connection-backoff.md, grpc-go's
// internal/backoff): base * multiplier^retries, capped at the maximum,
// then up to jitter longer.
func worstDelay(c backoff.Config, retries int) time.Duration {
	d := math.Min(float64(c.BaseDelay)*math.Pow(c.Multiplier, float64(retries)), float64(c.MaxDelay))
	return time.Duration(d * (1 + c.Jitter))
}

// backoffViolations says how c breaks skiff's reconnect policy: the first
// retry within 120 ms (the kubelet's 100 ms, plus jitter) and no wait ever
// longer than reconnectMaxDelay plus jitter, however long the outage.
func backoffViolations(c backoff.Config) []string {
	var out []string
	if d := worstDelay(c, 0); d > 120*time.Millisecond {
		out = append(out, "first retry after up to "+d.String())
	}
	limit := time.Duration(float64(reconnectMaxDelay) * 1.2)
	for n := range 100 {
		if d := worstDelay(c, n); d > limit {
			out = append(out, "retry "+d.String()+" apart, over "+limit.String())
			break
		}
	}
	return out
}

// TestReconnectBackoffPolicy: the back-off the client dials with keeps a
// runtime that came back at most ~1.2 s from its first working call, and
// gRPC's default (1 s growing to 120 s) would not. Deterministic: the
// schedule is computed, not waited for; the test below proves the client
// uses it.
func TestReconnectBackoffPolicy(t *testing.T) {
	if v := backoffViolations(connectParams.Backoff); len(v) > 0 {
		t.Errorf("connectParams.Backoff %+v: %v", connectParams.Backoff, v)
	}
	if v := backoffViolations(backoff.DefaultConfig); len(v) != 2 {
		t.Errorf("the check passes gRPC's default back-off: %v", v)
	}
}

// dialLog is the sequence of a client's dials and calls, in order.
type dialLog struct {
	mu     sync.Mutex
	events []string // "dial ok", "dial failed", "call ok", "call failed"
}

func (l *dialLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// since returns the events from index i on, and the current length.
func (l *dialLog) since(i int) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events[i:]...), len(l.events)
}

func count(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}

// TestReconnectsPromptlyAfterRuntimeRestart: while the runtime is down the
// client keeps dialing with connectParams' back-off (gRPC's default would
// dial 3 times in 3 s and then ever more rarely, up to 120 s apart), and
// once the runtime is back the first dial connects and no call fails after
// it. The checks are on the order of dials and calls; the wall-clock
// limits are only hang guards, 5x what the back-off needs (8 s for six
// dials, which take 1.6 s with connectParams and at least 12.7 s with
// gRPC's default). TestReconnectBackoffPolicy checks the schedule's cap.
func TestReconnectsPromptlyAfterRuntimeRestart(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	f := newFakeCRI()
	start := func() *grpc.Server {
		lis, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		runtimeapi.RegisterRuntimeServiceServer(srv, f)
		go func() { _ = srv.Serve(lis) }() // stopped below or in Cleanup
		return srv
	}
	srv := start()
	var log dialLog
	dialer := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", sock)
		log.add(map[bool]string{true: "dial ok", false: "dial failed"}[err == nil])
		return c, err
	})
	ctx := context.Background()
	r, err := newRuntime(ctx, "unix://"+sock, time.Second, dialer)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call := func() bool {
		_, err := r.Version(ctx)
		log.add(map[bool]string{true: "call ok", false: "call failed"}[err == nil])
		return err == nil
	}

	srv.Stop() // the runtime goes away (and its socket with it)
	_, mark := log.since(0)
	const wantDials = 6
	for guard := time.Now().Add(8 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if call() {
			t.Fatal("Version succeeded while the runtime is down")
		}
		ev, _ := log.since(mark)
		if n := count(ev, "dial failed"); n >= wantDials {
			break
		} else if time.Now().After(guard) {
			t.Fatalf("%d dials in 8 s of outage, want %d (reconnect back-off too long)", n, wantDials)
		}
	}

	srv = start()
	defer srv.Stop()
	_, mark = log.since(0)
	back := time.Now()
	for guard := back.Add(10 * time.Second); !call(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(guard) {
			t.Fatal("Version still fails 10 s after the runtime returned")
		}
	}
	ev, _ := log.since(mark)
	okDial := -1
	for i, e := range ev {
		if e == "dial ok" && okDial < 0 {
			okDial = i
		}
		if e == "dial failed" {
			t.Errorf("a dial failed after the runtime returned: %v", ev)
		}
	}
	// Calls run one at a time, so one call may have been in flight, failing,
	// when the dial connected; every call after it must work.
	if okDial < 0 || count(ev[okDial:], "call failed") > 1 {
		t.Errorf("want the first dial to connect and every call started after it to work: %v", ev)
	}
	t.Logf("reconnected %v after the runtime returned", time.Since(back).Round(time.Millisecond))
}
