package criops

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// WaitFirstStarted polls the containers (in any state) of the pods named
// in names, namespace ns, every poll until each pod has a container that
// started, and returns per pod the earliest CRI StartedAt among its
// containers when it was first seen with one: its first container to run,
// init or app, even if that one already exited (a crash loop, an OOM).
// Blocks until done or ctx ends (error naming pods still missing).
func (c *Client) WaitFirstStarted(ctx context.Context, ns string, names []string, poll time.Duration) (map[string]time.Time, error) {
	set := nameSet(names)
	started := make(map[string]time.Time, len(names))
	for {
		resp, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{LabelPodNamespace: ns},
		}})
		if err == nil {
			seen := map[string]time.Time{}
			for _, ctr := range resp.Containers {
				pod := ctr.Labels[LabelPodName]
				if _, done := started[pod]; done || !set[pod] {
					continue
				}
				st, err := c.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.Id})
				if err != nil || st.Status.GetStartedAt() == 0 {
					continue // gone, or created and not started yet
				}
				at := time.Unix(0, st.Status.GetStartedAt())
				if t, ok := seen[pod]; !ok || at.Before(t) {
					seen[pod] = at
				}
			}
			for pod, at := range seen {
				started[pod] = at
			}
		}
		if len(started) >= len(names) {
			return started, nil
		}
		select {
		case <-ctx.Done():
			return started, fmt.Errorf("wait for %d pods' first container: %d started when %w (missing e.g. %s)",
				len(names), len(started), ctx.Err(), missing(names, started))
		case <-time.After(poll):
		}
	}
}

// PodContainers returns the status of every container (any state) of pod
// name in namespace ns, as the runtime has them now.
func (c *Client) PodContainers(ctx context.Context, ns, name string) ([]*runtimeapi.ContainerStatus, error) {
	resp, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{LabelPodNamespace: ns, LabelPodName: name},
	}})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", ns, name, err)
	}
	out := make([]*runtimeapi.ContainerStatus, 0, len(resp.Containers))
	for _, ctr := range resp.Containers {
		st, err := c.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.Id})
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, st.Status)
	}
	return out, nil
}
