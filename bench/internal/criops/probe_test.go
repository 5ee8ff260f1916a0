package criops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRT is a runtime that records the floor's calls in order; ExecSync
// also signals execs. Only the calls the floor makes are implemented.
type fakeRT struct {
	runtimeapi.RuntimeServiceClient
	mu    sync.Mutex
	calls []string
	n     int
	execs chan *runtimeapi.ExecSyncRequest
}

func (r *fakeRT) record(call string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.calls = append(r.calls, call)
	return fmt.Sprintf("id%d", r.n)
}

func (r *fakeRT) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *fakeRT) RunPodSandbox(_ context.Context, _ *runtimeapi.RunPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: r.record("RunPodSandbox")}, nil
}

func (r *fakeRT) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	if req.Config.Labels[LabelPodName] == "bad" {
		return nil, errors.New("create failed")
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: r.record("CreateContainer " + req.Config.Metadata.Name)}, nil
}

func (r *fakeRT) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StartContainerResponse, error) {
	r.record("StartContainer " + req.ContainerId)
	return &runtimeapi.StartContainerResponse{}, nil
}

func (r *fakeRT) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: req.ContainerId,
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: 1}}, nil
}

func (r *fakeRT) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	r.record("StopContainer " + req.ContainerId)
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *fakeRT) StopPodSandbox(_ context.Context, _ *runtimeapi.StopPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error) {
	r.record("StopPodSandbox")
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (r *fakeRT) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	r.record(fmt.Sprintf("ExecSync %s %v timeout %d", req.ContainerId, req.Cmd, req.Timeout))
	r.execs <- req
	return &runtimeapi.ExecSyncResponse{ExitCode: 0}, nil
}

// fakeClock hands each After's channel and duration to the test.
type fakeClock struct{ afters chan fakeTimer }

type fakeTimer struct {
	d  time.Duration
	ch chan time.Time
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	t := fakeTimer{d, make(chan time.Time, 1)}
	c.afters <- t
	return t.ch
}

func newFakeFloor(t *testing.T) (*Floor, *fakeRT, *fakeClock) {
	rt := &fakeRT{execs: make(chan *runtimeapi.ExecSyncRequest, 10)}
	clk := &fakeClock{afters: make(chan fakeTimer, 10)}
	return &Floor{C: &Client{RT: rt}, LogDir: t.TempDir(), Poll: time.Millisecond, After: clk.After}, rt, clk
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

func none[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestFloorProbesFromStartUntilStop: the probe-making floor execs the
// probe command on the app container at once after its start, then once
// per period, and StopPod stops the loop before it stops the container.
func TestFloorProbesFromStartUntilStop(t *testing.T) {
	f, rt, clk := newFakeFloor(t)
	p := Pod{Name: "p", Namespace: "ns", UID: "u",
		App: Container{Name: "app", Image: "busybox", Probe: &ExecProbe{Command: []string{"true"}, Period: 10 * time.Second}}}
	s, err := f.StartPod(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// First probe right after the start, with no tick.
	if req := recv(t, rt.execs, "first probe"); req.ContainerId != s.AppID || !slices.Equal(req.Cmd, []string{"true"}) || req.Timeout != 1 {
		t.Errorf("first probe = %+v, want [true] on app %s, timeout 1", req, s.AppID)
	}
	for i := range 3 {
		tm := recv(t, clk.afters, "wait for the next period")
		if tm.d != 10*time.Second {
			t.Errorf("waits %v between probes, want 10s", tm.d)
		}
		none(t, rt.execs, "probe before the period passed")
		tm.ch <- time.Time{}
		recv(t, rt.execs, fmt.Sprintf("probe %d", i+2))
	}
	recv(t, clk.afters, "wait after the last probe")
	if err := f.StopPod(context.Background(), s, 5); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.probes.done:
	default:
		t.Error("probe loop still running after StopPod returned")
	}
	none(t, rt.execs, "probe after StopPod")
	if calls, fails := s.ProbeCalls(); calls != 4 || fails != 0 {
		t.Errorf("ProbeCalls = %d, %d; want 4, 0", calls, fails)
	}
	log := rt.log()
	stop := slices.Index(log, "StopContainer "+s.AppID)
	lastExec := -1
	for i, c := range log {
		if strings.HasPrefix(c, "ExecSync") {
			lastExec = i
		}
	}
	if stop < 0 || lastExec < 0 || stop < lastExec {
		t.Errorf("calls %v: want every ExecSync before StopContainer", log)
	}
	s.StopProbes() // idempotent
}

// TestFloorWithoutProbeMakesNoExec: a plain floor pod makes no ExecSync.
func TestFloorWithoutProbeMakesNoExec(t *testing.T) {
	f, rt, _ := newFakeFloor(t)
	s, err := f.StartPod(context.Background(), Pod{Name: "p", App: Container{Name: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StopPod(context.Background(), s, 5); err != nil {
		t.Fatal(err)
	}
	none(t, rt.execs, "probe of a plain floor pod")
	if calls, _ := s.ProbeCalls(); calls != 0 {
		t.Errorf("ProbeCalls = %d, want 0", calls)
	}
}

// TestRunProbesEndsWithItsContext: the loop returns when its context ends
// while it waits for the next period.
func TestRunProbesEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := &fakeClock{afters: make(chan fakeTimer, 10)}
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		runProbes(ctx, time.Second, clk.After, func(context.Context) { calls++ })
	}()
	recv(t, clk.afters, "wait")
	cancel()
	recv(t, done, "return after cancel")
	if calls != 1 {
		t.Errorf("%d probes, want 1", calls)
	}
}

// TestStartAllStopsProbesOnError: when one pod fails, StartAll stops the
// probe loops of those it started before returning.
func TestStartAllStopsProbesOnError(t *testing.T) {
	f, rt, _ := newFakeFloor(t)
	probe := &ExecProbe{Command: []string{"true"}, Period: 10 * time.Second}
	pods := []Pod{{Name: "good", App: Container{Name: "app", Probe: probe}}, {Name: "bad", App: Container{Name: "app", Probe: probe}}}
	res, err := f.StartAll(context.Background(), pods, 1)
	if err == nil {
		t.Fatal("want the bad pod's error")
	}
	recv(t, rt.execs, "the good pod's first probe")
	select {
	case <-res.Started[0].probes.done:
	default:
		t.Error("the good pod's probe loop still runs after StartAll failed")
	}
}
