package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// graceWorker is a pod worker for pod on a fake runtime and a fake clock
// whose exec hooks (preStop) take hookTakes of the clock's time.
func graceWorker(t *testing.T, pod *v1.Pod, hookTakes time.Duration) (*podWorker, *fake.Runtime, *int) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(clk.Now)
	hooksRun := 0
	exec := func(context.Context, string, []string, time.Duration) ([]byte, error) {
		hooksRun++ // runPreStop waits for the hook: no race with the test
		clk.Step(hookTakes)
		return nil, nil
	}
	owner := &fakeOwner{}
	d := &workerDeps{
		rt: rt, clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil)), prober: noProber{},
		starts: startgate.New(1), teardowns: startgate.New(1), events: events.NewRecorder(clk, "node"),
		hooks: newHookRunner(exec), podLogsDir: t.TempDir(), resync: time.Hour, owner: owner, status: owner,
	}
	return newPodWorker(d, pod, nil), rt, &hooksRun
}

// The grace period a container is stopped with (A.43, C.7): the pod's
// terminationGracePeriodSeconds (30s if unset), replaced by an override
// (a deletion's deletionGracePeriodSeconds, a probe's or a shutdown's
// period), less what the preStop hook took, rounded up to whole seconds
// and never under the 2s minimum. Each case fails if its input is ignored.
func TestKillContainerGracePeriod_A43_C7(t *testing.T) {
	tests := []struct {
		name      string
		spec      *int64
		override  *int64
		preStop   bool
		hookTakes time.Duration
		want      time.Duration
	}{
		{"unset: the default 30s", nil, nil, false, 0, 30 * time.Second},
		{"spec 5s", ptr.To[int64](5), nil, false, 0, 5 * time.Second},
		{"spec 45s", ptr.To[int64](45), nil, false, 0, 45 * time.Second},
		{"spec 1s: the 2s minimum", ptr.To[int64](1), nil, false, 0, 2 * time.Second},
		{"spec 0s: the 2s minimum", ptr.To[int64](0), nil, false, 0, 2 * time.Second},
		{"override 7s replaces spec 5s", ptr.To[int64](5), ptr.To[int64](7), false, 0, 7 * time.Second},
		{"override 90s replaces the default", nil, ptr.To[int64](90), false, 0, 90 * time.Second},
		{"override 0s: the 2s minimum", ptr.To[int64](60), ptr.To[int64](0), false, 0, 2 * time.Second},
		{"preStop took 3s of 10s", ptr.To[int64](10), nil, true, 3 * time.Second, 7 * time.Second},
		{"preStop took 2.5s of 10s: rounded up", ptr.To[int64](10), nil, true, 2500 * time.Millisecond, 8 * time.Second},
		{"preStop took 4s of the override's 20s", ptr.To[int64](60), ptr.To[int64](20), true, 4 * time.Second, 16 * time.Second},
		{"preStop took 9s of 10s: the 2s minimum", ptr.To[int64](10), nil, true, 9 * time.Second, 2 * time.Second},
		{"preStop ran past the grace: the 2s minimum", ptr.To[int64](10), nil, true, 12 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("Always", nil, "app")
			pod.Spec.TerminationGracePeriodSeconds = tt.spec
			if tt.preStop {
				pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
			}
			w, rt, hooksRun := graceWorker(t, pod, tt.hookTakes)
			cs := &runtime.ContainerStatus{Container: runtime.Container{ID: "app", Name: "app", State: runtime.ContainerRunning}}
			if err := w.killContainer(context.Background(), cs, "", "", *w.graceSeconds(tt.override), nil); err != nil {
				t.Fatal(err)
			}
			if d, ok := rt.StopTimeout("app"); !ok || d != tt.want {
				t.Errorf("StopContainer timeout %v (called: %t), want %v", d, ok, tt.want)
			}
			if want := map[bool]int{true: 1}[tt.preStop]; *hooksRun != want {
				t.Errorf("preStop ran %d times, want %d", *hooksRun, want)
			}
		})
	}
}

// A container killed for a failed liveness probe is stopped with the
// probe's terminationGracePeriodSeconds, not the pod's (B.12).
func TestLivenessKillUsesProbeGrace_B12(t *testing.T) {
	rt := newFakeRuntime()
	pr := newFakeProber()
	h := startAgentWith(t, rt, pr)
	pod := testPod("Always", nil, "a")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](3)}
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	pr.set(pr.liveFail, "a", true)
	h.eventually("container stopped", func() bool { _, ok := rt.StopTimeout("a"); return ok })
	if d, _ := rt.StopTimeout("a"); d != 3*time.Second {
		t.Errorf("StopContainer timeout %v, want the probe's 3s", d)
	}
}
