package agent

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestAgentTakesPodEdits_H1: a source's newer object of a running pod (an
// API pod edited) reaches its worker: a changed image restarts that
// container with the new image (the kubelet's "definition changed") and
// leaves the others running; new labels show in the published pod; a
// shorter activeDeadlineSeconds fails the pod (A.9).
func TestAgentTakesPodEdits_H1(t *testing.T) {
	rt := newFakeRuntime()
	rt.AddImage("img2")
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "a", "b")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	a0, _ := rt.ContainerByName("uid1", "a")
	b0, _ := rt.ContainerByName("uid1", "b")

	edited := pod.DeepCopy()
	edited.Spec.Containers[0].Image = "img2"
	edited.Labels = map[string]string{"tier": "web"}
	h.src.ch <- []*v1.Pod{edited}
	h.eventually("a restarted with img2", func() bool {
		c, ok := rt.ContainerByName("uid1", "a")
		return ok && c.ID != a0.ID && c.Image == "sha256:img2" && c.State == runtime.ContainerRunning
	})
	if c, _ := rt.ContainerByName("uid1", "a"); c.Attempt != a0.Attempt+1 {
		t.Errorf("a's attempt = %d, want %d", c.Attempt, a0.Attempt+1)
	}
	if b, _ := rt.ContainerByName("uid1", "b"); b.ID != b0.ID || b.State != runtime.ContainerRunning {
		t.Errorf("b = %s %v, want %s still running", b.ID, b.State, b0.ID)
	}
	h.eventually("labels published", func() bool {
		p := h.pod("uid1")
		return p != nil && p.Labels["tier"] == "web"
	})
	var killing bool
	for _, e := range h.agent.Events() {
		killing = killing || (e.Reason == EventKilling && e.Message == "Container a definition changed, will be restarted")
	}
	if !killing {
		t.Error("no Killing event: Container a definition changed, will be restarted")
	}

	deadline := int64(0)
	again := edited.DeepCopy()
	again.Spec.ActiveDeadlineSeconds = &deadline
	h.src.ch <- []*v1.Pod{again}
	h.eventually("pod Failed with DeadlineExceeded", func() bool {
		p := h.pod("uid1")
		return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
}

// TestAgentStartsEphemeralContainers: an ephemeral container added to a
// running pod (kubectl debug) starts in its target's PID namespace, shows
// in ephemeralContainerStatuses (never Ready, the pod stays Ready), and is
// not restarted after it exits; the app container is left alone.
func TestAgentStartsEphemeralContainers(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "app")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	app, _ := rt.ContainerByName("uid1", "app")

	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "img"},
		TargetContainerName:      "app",
	}}
	h.src.ch <- []*v1.Pod{debug}
	h.eventually("debugger running", func() bool {
		c, ok := rt.ContainerByName("uid1", "debugger")
		return ok && c.State == runtime.ContainerRunning
	})
	dbg, _ := rt.ContainerByName("uid1", "debugger")
	if spec, _ := rt.ContainerSpecOf(dbg.ID); spec.TargetContainerID != app.ID {
		t.Errorf("debugger's PID namespace target %q, want app's %s", spec.TargetContainerID, app.ID)
	}
	h.eventually("ephemeral status", func() bool {
		p := h.pod("uid1")
		return p != nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil
	})
	if p := h.pod("uid1"); p.Status.EphemeralContainerStatuses[0].Ready || !podReadyCondition(p) {
		t.Errorf("ephemeral Ready %t, pod Ready %t; want false, true", p.Status.EphemeralContainerStatuses[0].Ready, podReadyCondition(p))
	}
	rt.Exit(dbg.ID, 0)
	h.eventually("debugger exited in status", func() bool {
		p := h.pod("uid1")
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
	})
	if c, _ := rt.ContainerByName("uid1", "debugger"); c.ID != dbg.ID {
		t.Errorf("ephemeral container restarted: %s", c.ID)
	}
	if a, _ := rt.ContainerByName("uid1", "app"); a.ID != app.ID || a.State != runtime.ContainerRunning {
		t.Errorf("app disturbed: %s %v", a.ID, a.State)
	}
}

func podReadyCondition(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
