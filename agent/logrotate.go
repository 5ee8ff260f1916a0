package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// LogRotationRuntime is podlogs' rotation port over the runtime: the
// running containers skiff created (A.4) and their log paths, and
// ReopenContainerLog.
type LogRotationRuntime struct {
	rt runtime.Runtime

	mu sync.Mutex
	// paths caches each running container's log path (asked once per
	// container with ContainerStatus), by container ID.
	paths map[string]string
	refs  []runtime.ContainerRef
}

// NewLogRotationRuntime returns the rotation port over rt.
func NewLogRotationRuntime(rt runtime.Runtime) *LogRotationRuntime {
	return &LogRotationRuntime{rt: rt, paths: map[string]string{}}
}

var _ podlogs.RotateRuntime = (*LogRotationRuntime)(nil)

// RunningContainerLogs lists skiff's running containers and their log
// paths: one cheap ref listing per call (runtime.ListContainerRefs), and
// one ContainerStatus per container the first time it is seen running.
// Blocking; safe for concurrent use.
func (l *LogRotationRuntime) RunningContainerLogs(ctx context.Context) ([]podlogs.RunningLog, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	refs, err := runtime.ListContainerRefs(ctx, l.rt, managedSelector(), labelPodUID, l.refs)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	l.refs = refs
	running := make(map[string]bool, len(refs))
	var out []podlogs.RunningLog
	for _, r := range refs {
		if r.State != runtime.ContainerRunning {
			continue
		}
		running[r.ID] = true
		path, ok := l.paths[r.ID]
		if !ok {
			st, err := l.rt.ContainerStatus(ctx, r.ID)
			if err != nil {
				// Gone meanwhile, or the next listing asks again.
				continue
			}
			path = st.LogPath
			l.paths[r.ID] = path
		}
		if path != "" {
			out = append(out, podlogs.RunningLog{ID: r.ID, Path: path})
		}
	}
	for id := range l.paths {
		if !running[id] {
			delete(l.paths, id)
		}
	}
	return out, nil
}

// ReopenContainerLog implements podlogs.RotateRuntime.
func (l *LogRotationRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	return l.rt.ReopenContainerLog(ctx, id)
}
