package probes

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffnode/skiff/internal/clocktest"
	"github.com/skiffnode/skiff/runtime"
)

// runtime.Runtime must satisfy Execer, so the agent can pass it as is.
var _ Execer = runtime.Runtime(nil)

// waitLimit bounds every wait for a goroutine in these tests; nothing
// sleeps for real otherwise.
const waitLimit = 5 * time.Second

// t0 is the fake clock's start.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// execReply is what fakeExec answers for one command.
type execReply struct {
	exit   int32
	stdout string
	stderr string
	err    error
	panic  bool
}

// fakeExec is a hand-written Execer. Replies are keyed by the command's
// first word and sticky: a test sets a reply, then lets the probe run.
type fakeExec struct {
	mu      sync.Mutex
	replies map[string]execReply
	calls   map[string]int
	last    []string      // the last command run
	lastID  string        // the container of the last command
	timeout time.Duration // the timeout of the last command
	block   chan struct{} // if set, every call waits for it or ctx
}

func newFakeExec() *fakeExec {
	return &fakeExec{replies: map[string]execReply{}, calls: map[string]int{}}
}

func (f *fakeExec) set(cmd string, r execReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies[cmd] = r
}

func (f *fakeExec) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cmd]
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	f.mu.Lock()
	f.calls[cmd[0]]++
	f.last, f.lastID, f.timeout = cmd, id, timeout
	r := f.replies[cmd[0]]
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if r.panic {
		panic("exec exploded")
	}
	if r.err != nil {
		return nil, r.err
	}
	return &runtime.ExecResult{Stdout: []byte(r.stdout), Stderr: []byte(r.stderr), ExitCode: r.exit}, nil
}

// execProbe returns an exec probe running cmd with the given timing.
func execProbe(cmd string, initialDelay, period, success, failure int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		SuccessThreshold:    success,
		FailureThreshold:    failure,
	}
}

// testPod returns a pod with one container "app".
func testPod(uid string, c v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metaFor(uid),
		Spec:       v1.PodSpec{Containers: []v1.Container{c}},
	}
}

func metaFor(uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)}
}

// hostPort splits a listener address into host and port.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// intPort is a numeric probe port.
func intPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port := hostPort(t, l.Addr().String())
	l.Close()
	return port
}

// eventLog records Config.Events / workerOwner events.
type eventLog struct {
	mu     sync.Mutex
	events []string // "reason: message"
}

func (l *eventLog) add(reason, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, reason+": "+message)
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// newFakeClock returns a fake clock at t0.
func newFakeClock() *clocktest.Clock { return clocktest.New(t0) }

// waitClosed fails the test unless ch is closed within waitLimit.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("%s: not done after %v", what, waitLimit)
	}
}
