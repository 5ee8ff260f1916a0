package criops

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// phaseRT serves one sandbox's status and containers (their statuses by
// id, in nanoseconds).
type phaseRT struct {
	runtimeapi.RuntimeServiceClient
	sandboxCreated int64
	ctrs           []*runtimeapi.Container
	status         map[string]*runtimeapi.ContainerStatus
}

func (r *phaseRT) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: req.PodSandboxId, CreatedAt: r.sandboxCreated}}, nil
}

func (r *phaseRT) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	var out []*runtimeapi.Container
	for _, c := range r.ctrs {
		if c.PodSandboxId == req.Filter.PodSandboxId {
			out = append(out, c)
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (r *phaseRT) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: r.status[req.ContainerId]}, nil
}

func sbCtr(id, sandbox, name string, attempt uint32) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, PodSandboxId: sandbox, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}}
}

// PodTimes takes the latest attempt of each container of the sandbox, and
// Phases splits the path at its timestamps.
func TestPodTimesPhases(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	rt := &phaseRT{sandboxCreated: ms(100),
		ctrs: []*runtimeapi.Container{sbCtr("i0", "sb", "init", 0), sbCtr("i1", "sb", "init", 1), sbCtr("a0", "sb", "app", 0), sbCtr("x", "other", "app", 3)},
		status: map[string]*runtimeapi.ContainerStatus{
			"i0": {CreatedAt: ms(1), StartedAt: ms(2), FinishedAt: ms(3)},
			"i1": {CreatedAt: ms(300), StartedAt: ms(350), FinishedAt: ms(360)},
			"a0": {CreatedAt: ms(400), StartedAt: ms(450)},
		}}
	c := &Client{RT: rt}
	got, err := c.PodTimes(context.Background(), "sb", "init", "app")
	if err != nil {
		t.Fatal(err)
	}
	phases := got.Phases(time.Unix(0, 0))
	want := []float64{0.1, 0.2, 0.05, 0.01, 0.04, 0.05}
	if len(phases) != len(PhaseNames()) || !slices.EqualFunc(phases, want, func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }) {
		t.Errorf("phases = %v, want %v (%d names)", phases, want, len(PhaseNames()))
	}
	if _, err := c.PodTimes(context.Background(), "sb", "init2", "app"); err == nil || !strings.Contains(err.Error(), "init2") {
		t.Errorf("PodTimes without the init container: err %v, want one naming init2", err)
	}
}
