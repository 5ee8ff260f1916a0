package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestActiveDeadlineFailsPod_A38_A39 runs two pods with a short
// activeDeadlineSeconds: one whose app runs, one stuck in its init
// container. Both go Failed with reason DeadlineExceeded around the
// deadline, their containers are killed and nothing restarts.
func TestActiveDeadlineFailsPod_A38_A39(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	spec := []string{"activeDeadlineSeconds: 5", "terminationGracePeriodSeconds: 5"}
	e.WriteManifest(t, "deadline-app.yaml", podSpec("deadline-app", spec, nil, []string{sleeper("app")}))
	e.WriteManifest(t, "deadline-init.yaml", podSpec("deadline-init", spec,
		[]string{sleeper("init")}, []string{sleeper("app")}))

	const msg = "Pod was active on the node longer than the specified deadline"
	for _, pod := range []string{"deadline-app", "deadline-init"} {
		name := PodName(pod)
		p := e.WaitForPod(t, name, phaseIs(v1.PodFailed), lifecycleTimeout)
		failedAt := time.Now()
		if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != msg {
			t.Errorf("%s: reason %q message %q, want DeadlineExceeded %q", pod, p.Status.Reason, p.Status.Message, msg)
		}
		if p.Status.StartTime == nil {
			t.Fatalf("%s: no startTime", pod)
		}
		if active := failedAt.Sub(p.Status.StartTime.Time); active < 4*time.Second || active > 20*time.Second {
			t.Errorf("%s: Failed seen %s after startTime, want ~5s (activeDeadlineSeconds)", pod, active)
		}
		if ev := e.WaitForEvent(t, p, "", "DeadlineExceeded", msg, 10*time.Second); ev.Type != v1.EventTypeNormal {
			t.Errorf("%s: DeadlineExceeded event type %s, want Normal", pod, ev.Type)
		}
		if got := conditionStatus(p, v1.PodReady); got != v1.ConditionFalse {
			t.Errorf("%s: Ready %s after the deadline, want False", pod, got)
		}
	}
	for _, pod := range []string{"deadline-app", "deadline-init"} {
		name := PodName(pod)
		eventually(t, 30*time.Second, func() (bool, string) {
			for _, c := range e.Containers(t, podLabels(name)) {
				if c.State == runtime.ContainerRunning {
					return false, fmt.Sprintf("%s: container %s still running after the deadline", pod, c.Name)
				}
			}
			return true, ""
		})
	}
	before := map[string]int{}
	for _, pod := range []string{"deadline-app", "deadline-init"} {
		before[pod] = len(e.Containers(t, podLabels(PodName(pod))))
	}
	time.Sleep(3 * time.Second)
	for _, pod := range []string{"deadline-app", "deadline-init"} {
		name := PodName(pod)
		p := e.WaitForPod(t, name, func(*v1.Pod) bool { return true }, podStartTimeout)
		if p.Status.Phase != v1.PodFailed {
			t.Errorf("%s: phase %s 3s later, want it to stay Failed", pod, p.Status.Phase)
		}
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if st.State.Running != nil {
				t.Errorf("%s: container %s reported running in a Failed pod", pod, st.Name)
			}
		}
		if n := len(e.Containers(t, podLabels(name))); n != before[pod] {
			t.Errorf("%s: %d containers now, %d before; nothing may start after the deadline", pod, n, before[pod])
		}
	}
	// The init container never finished: the app container never ran.
	if n := len(e.Containers(t, map[string]string{"io.kubernetes.pod.name": PodName("deadline-init"), "io.kubernetes.container.name": "app"})); n != 0 {
		t.Errorf("deadline-init: app container created %d times, want never", n)
	}
}
