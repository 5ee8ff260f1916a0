package agent

import (
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestAgentDeletedPodUsesDeletionGrace_A43_A46: a source's pod that gets a
// deletionTimestamp is terminated with the deletion's grace period, not
// its spec's; once gone, Terminated holds, PodChanged told, and the pod is
// not started again although the source still lists it.
func TestAgentDeletedPodUsesDeletionGrace_A43_A46(t *testing.T) {
	rt := newFakeRuntime()
	var mu sync.Mutex
	changed := map[types.UID]int{}
	cfg := testConfig(t, rt)
	cfg.PodChanged = func(uid types.UID) { mu.Lock(); changed[uid]++; mu.Unlock() }
	h := runTestAgent(t, cfg)
	pod := testPod("Always", nil, "app")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if h.agent.Terminated("uid1") {
		t.Fatal("Terminated while running")
	}
	if p, ok := h.agent.Pod("uid1"); !ok || p.Status.Phase != v1.PodRunning {
		t.Fatalf("Pod(uid1) = %v, %t", p, ok)
	}
	deleted := pod.DeepCopy()
	now, grace := metav1.Now(), int64(7)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &now, &grace
	h.src.ch <- []*v1.Pod{deleted}
	h.eventually("pod terminated", func() bool { return h.agent.Terminated("uid1") })
	if d, _ := rt.StopTimeout("app"); d != 7*time.Second {
		t.Errorf("StopContainer timeout %s, want the deletion's 7s", d)
	}
	h.settle(10) // relists and reconciles
	if _, ok := rt.ContainerByName("uid1", "app"); ok {
		t.Error("a deleted pod was started again")
	}
	mu.Lock()
	defer mu.Unlock()
	if changed["uid1"] < 2 {
		t.Errorf("PodChanged called %d times, want publishes and the removal", changed["uid1"])
	}
}

// TestAgentNeverStartsFinishedPods_A46: an API pod listed as deleted or
// with a terminal phase, of which nothing runs, is never started and
// counts as terminated.
func TestAgentNeverStartsFinishedPods_A46(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	del := testPod("Always", nil, "app")
	now := metav1.Now()
	del.DeletionTimestamp = &now
	done := testPod("Never", nil, "app")
	done.UID, done.Name, done.Status.Phase = "uid2", "done", v1.PodSucceeded
	h.src.ch <- []*v1.Pod{del, done}
	h.eventually("both terminated", func() bool { return h.agent.Terminated("uid1") && h.agent.Terminated("uid2") })
	h.settle(10)
	for _, c := range rt.Calls() {
		if c != "Version" && !strings.HasPrefix(c, "List") {
			t.Errorf("runtime call %q for a finished pod", c)
		}
	}
}
