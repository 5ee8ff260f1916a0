package criops

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listRT serves ListContainers and ContainerStatus from a table that the
// test changes between polls; polls counts the listings.
type listRT struct {
	runtimeapi.RuntimeServiceClient
	mu      sync.Mutex
	ctrs    []*runtimeapi.Container
	started map[string]int64 // container id -> StartedAt (0: not started)
	polls   int
	onPoll  func(n int) // called before the n-th listing answers
}

func (r *listRT) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.polls++
	if r.onPoll != nil {
		r.onPoll(r.polls)
	}
	var out []*runtimeapi.Container
	for _, c := range r.ctrs {
		if c.Labels[LabelPodNamespace] == req.Filter.LabelSelector[LabelPodNamespace] {
			out = append(out, c)
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (r *listRT) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: req.ContainerId, StartedAt: r.started[req.ContainerId]}}, nil
}

func withID(c *runtimeapi.Container, id string) *runtimeapi.Container { c.Id = id; return c }

// TestWaitFirstStartedTakesEachPodsEarliestContainer: a pod counts from
// its earliest started container in any state (an init that already
// exited before the app), waits for pods with only unstarted containers,
// and ignores other namespaces and pods.
func TestWaitFirstStartedTakesEachPodsEarliestContainer(t *testing.T) {
	rt := &listRT{
		ctrs: []*runtimeapi.Container{
			withID(ctr("ns", "a", "app"), "a-app"), withID(ctr("ns", "a", "init"), "a-init"),
			withID(ctr("ns", "b", "app"), "b-app"),
			withID(ctr("other", "b", "app"), "other-b"), withID(ctr("ns", "z", "app"), "z-app"),
		},
		started: map[string]int64{"a-app": 300, "a-init": 100, "other-b": 50, "z-app": 10},
	}
	// b's app starts only at the third poll.
	rt.onPoll = func(n int) {
		if n == 3 {
			rt.started["b-app"] = 200
		}
	}
	c := &Client{RT: rt}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := c.WaitFirstStarted(ctx, "ns", []string{"a", "b"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got["a"].Equal(time.Unix(0, 100)) || !got["b"].Equal(time.Unix(0, 200)) || rt.polls != 3 {
		t.Errorf("WaitFirstStarted = %v after %d polls; want a at 100 (its init), b at 200, 3 polls", got, rt.polls)
	}
}

func TestWaitFirstStartedNamesMissingPods(t *testing.T) {
	c := &Client{RT: &listRT{ctrs: []*runtimeapi.Container{withID(ctr("ns", "a", "app"), "a-app")}, started: map[string]int64{}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.WaitFirstStarted(ctx, "ns", []string{"a"}, time.Millisecond); err == nil {
		t.Error("want an error for a pod whose container never started")
	}
}
