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
