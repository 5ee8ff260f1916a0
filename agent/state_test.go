package agent

import (
	"context"
	"testing"
	"time"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// statusWithoutSandbox is a runtime whose ContainerStatus, like CRI's,
// does not say the container's sandbox.
type statusWithoutSandbox struct{ *fake.Runtime }

func (r statusWithoutSandbox) ContainerStatus(ctx context.Context, id string) (*runtime.ContainerStatus, error) {
	st, err := r.Runtime.ContainerStatus(ctx, id)
	if err != nil {
		return nil, err
	}
	out := *st
	out.SandboxID = ""
	return &out, nil
}

// observe takes each container's sandbox from the listing where its status
// lacks it: the plan finds a pod's containers by their sandbox.
func TestObserveSandboxFromListing(t *testing.T) {
	rt := fake.New(time.Now)
	ids := gcPod(t, rt, t.TempDir(), "u1", nil, runtime.ContainerRunning)
	st, err := observe(context.Background(), statusWithoutSandbox{rt}, "u1")
	if err != nil {
		t.Fatal(err)
	}
	sb := st.sandbox()
	if sb == nil || len(st.Containers) != 1 || st.Containers[0].ID != ids[0] {
		t.Fatalf("observed %+v, want one sandbox and container %s", st, ids[0])
	}
	if got := st.latestIn(sb.ID); got["app"] == nil {
		t.Errorf("container %s not found in its sandbox %s (SandboxID %q)", ids[0], sb.ID, st.Containers[0].SandboxID)
	}
}
