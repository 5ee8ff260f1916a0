package agent

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// containerStatusCounting counts ContainerStatus calls.
type containerStatusCounting struct {
	*fake.Runtime
	n int
}

func (s *containerStatusCounting) ContainerStatus(ctx context.Context, id string) (*runtime.ContainerStatus, error) {
	s.n++
	return s.Runtime.ContainerStatus(ctx, id)
}

// TestLogRotationRuntimeListsSkiffsRunningContainers_A4: only skiff's
// running containers are rotated, and each one's log path is asked for
// once.
func TestLogRotationRuntimeListsSkiffsRunningContainers_A4(t *testing.T) {
	rt := &containerStatusCounting{Runtime: fake.New(time.Now)}
	logs := t.TempDir()
	ids := gcPod(t, rt.Runtime, logs, "mine", nil, runtime.ContainerExited, runtime.ContainerRunning)
	gcPod(t, rt.Runtime, logs, "theirs", map[string]string{"owner": "someone-else"}, runtime.ContainerRunning)
	l := NewLogRotationRuntime(rt)
	for range 2 {
		got, err := l.RunningContainerLogs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{ids[1] + " " + logs + "/ns_p-mine_mine/app/1.log"}
		var have []string
		for _, g := range got {
			have = append(have, g.ID+" "+g.Path)
		}
		if !slices.Equal(have, want) {
			t.Errorf("running logs %v, want %v", have, want)
		}
	}
	if rt.n != 1 {
		t.Errorf("%d ContainerStatus calls for one container listed twice, want 1", rt.n)
	}
}
