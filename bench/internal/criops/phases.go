package criops

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodTimes are the runtime's own timestamps along a pod's start: its
// sandbox's CreatedAt and its init and app containers' CreatedAt,
// StartedAt and (the init's) FinishedAt.
type PodTimes struct {
	SandboxCreated                         time.Time
	InitCreated, InitStarted, InitFinished time.Time
	AppCreated, AppStarted                 time.Time
}

// PhaseNames name the intervals of PodTimes.Phases, in order.
func PhaseNames() []string {
	return []string{
		"start -> sandbox CreatedAt",
		"sandbox CreatedAt -> init CreatedAt",
		"init CreatedAt -> StartedAt",
		"init StartedAt -> FinishedAt",
		"init FinishedAt -> app CreatedAt",
		"app CreatedAt -> StartedAt",
	}
}

// Phases splits t0 (the start of the measurement) -> AppStarted at the
// timestamps of t, in seconds, one per PhaseNames entry; they add up to
// AppStarted - t0.
func (t PodTimes) Phases(t0 time.Time) []float64 {
	marks := []time.Time{t0, t.SandboxCreated, t.InitCreated, t.InitStarted, t.InitFinished, t.AppCreated, t.AppStarted}
	out := make([]float64, len(marks)-1)
	for i := range out {
		out[i] = marks[i+1].Sub(marks[i]).Seconds()
	}
	return out
}

// PodTimes reads the timestamps of sandbox sandboxID and of its latest
// containers named init and app.
func (c *Client) PodTimes(ctx context.Context, sandboxID, init, app string) (PodTimes, error) {
	var t PodTimes
	sb, err := c.RT.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
	if err != nil {
		return t, fmt.Errorf("status of sandbox %s: %w", sandboxID, err)
	}
	t.SandboxCreated = time.Unix(0, sb.Status.GetCreatedAt())
	resp, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sandboxID}})
	if err != nil {
		return t, fmt.Errorf("containers of sandbox %s: %w", sandboxID, err)
	}
	latest := map[string]*runtimeapi.Container{}
	for _, ct := range resp.Containers {
		n := ct.GetMetadata().GetName()
		if l, ok := latest[n]; !ok || ct.GetMetadata().GetAttempt() > l.GetMetadata().GetAttempt() {
			latest[n] = ct
		}
	}
	for _, x := range []struct {
		name                     string
		created, started, finish *time.Time
	}{{init, &t.InitCreated, &t.InitStarted, &t.InitFinished}, {app, &t.AppCreated, &t.AppStarted, nil}} {
		ct, ok := latest[x.name]
		if !ok {
			return t, fmt.Errorf("sandbox %s has no container %q", sandboxID, x.name)
		}
		st, err := c.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ct.Id})
		if err != nil {
			return t, fmt.Errorf("status of container %s: %w", ct.Id, err)
		}
		*x.created, *x.started = time.Unix(0, st.Status.GetCreatedAt()), time.Unix(0, st.Status.GetStartedAt())
		if x.finish != nil {
			*x.finish = time.Unix(0, st.Status.GetFinishedAt())
		}
	}
	return t, nil
}
