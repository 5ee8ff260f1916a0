package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/skiffnode/skiff/runtime"
)

// podState is what the runtime holds for one pod UID: the input of the
// planner and of the status computation.
type podState struct {
	// Sandboxes, newest first.
	Sandboxes []*runtime.SandboxStatus
	// Containers of all sandboxes, newest first.
	Containers []*runtime.ContainerStatus
}

// sandbox returns the newest sandbox, or nil.
func (s *podState) sandbox() *runtime.SandboxStatus {
	if len(s.Sandboxes) == 0 {
		return nil
	}
	return s.Sandboxes[0]
}

// latestIn returns, per container name, the newest container in sandbox id.
func (s *podState) latestIn(sandboxID string) map[string]*runtime.ContainerStatus {
	out := map[string]*runtime.ContainerStatus{}
	for _, c := range s.Containers {
		if c.SandboxID != sandboxID {
			continue
		}
		if _, seen := out[c.Name]; !seen {
			out[c.Name] = c
		}
	}
	return out
}

// history returns all containers of that name, newest first.
func (s *podState) history(name string) []*runtime.ContainerStatus {
	var out []*runtime.ContainerStatus
	for _, c := range s.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// nextAttempt is the attempt number (restart count) for a new container.
func (s *podState) nextAttempt(name string) uint32 {
	h := s.history(name)
	if len(h) == 0 {
		return 0
	}
	return h[0].Attempt + 1
}

// observe reads the runtime state of one pod.
func observe(ctx context.Context, rt runtime.Runtime, uid string) (*podState, error) {
	sel := podSelector(uid)
	sbs, err := rt.ListSandboxes(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	st := &podState{}
	for _, sb := range sbs {
		ss, err := rt.SandboxStatus(ctx, sb.ID)
		if errors.Is(err, runtime.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of sandbox %s: %w", sb.ID, err)
		}
		st.Sandboxes = append(st.Sandboxes, ss)
	}
	cs, err := rt.ListContainers(ctx, runtime.ContainerFilter{Labels: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	for _, c := range cs {
		cst, err := rt.ContainerStatus(ctx, c.ID)
		if errors.Is(err, runtime.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %s: %w", c.ID, err)
		}
		if cst.SandboxID == "" { // not in a CRI status: the listing's
			cst.SandboxID = c.SandboxID
		}
		st.Containers = append(st.Containers, cst)
	}
	sortState(st)
	return st, nil
}

func sortState(st *podState) {
	sort.SliceStable(st.Sandboxes, func(i, j int) bool {
		a, b := st.Sandboxes[i], st.Sandboxes[j]
		if a.Attempt != b.Attempt {
			return a.Attempt > b.Attempt
		}
		return a.CreatedAt.After(b.CreatedAt)
	})
	sort.SliceStable(st.Containers, func(i, j int) bool {
		a, b := st.Containers[i], st.Containers[j]
		if a.Attempt != b.Attempt {
			return a.Attempt > b.Attempt
		}
		return a.CreatedAt.After(b.CreatedAt)
	})
}
