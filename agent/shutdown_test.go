package agent

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

const shutdownMsg = "Pod was terminated in response to imminent node shutdown."

func shutdownOptions(grace int64) TerminateOptions {
	return TerminateOptions{
		GracePeriodSeconds: &grace, Reason: "Terminated", Message: shutdownMsg,
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: shutdownMsg}},
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestTerminatePodFailsPodWithShutdownStatus_H17(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "app")
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if got := h.agent.ActivePods(); len(got) != 1 || got[0].UID != "uid1" {
		t.Fatalf("ActivePods = %v, want uid1", got)
	}

	waitClosed(t, h.agent.TerminatePod("uid1", shutdownOptions(7)), "TerminatePod")
	if d, ok := rt.StopTimeout("app"); !ok || d != 7*time.Second {
		t.Errorf("StopContainer timeout %v (%v), want the override 7s", d, ok)
	}
	sb := rt.Calls()
	if !contains(sb, "StopSandbox") {
		t.Errorf("sandbox not stopped: %v", sb)
	}
	// The channel closes once everything is stopped; the status that says
	// so comes with the next sync's observation.
	h.eventually("pod Failed", func() bool { return h.phase("uid1") == v1.PodFailed })
	p := h.pod("uid1")
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Terminated" || p.Status.Message != shutdownMsg {
		t.Errorf("status %s %q %q, want Failed Terminated %q", p.Status.Phase, p.Status.Reason, p.Status.Message, shutdownMsg)
	}
	var dt *v1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.DisruptionTarget {
			dt = &p.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" || dt.Message != shutdownMsg || dt.LastTransitionTime.IsZero() {
		t.Errorf("DisruptionTarget condition %+v", dt)
	}
	if got := h.agent.ActivePods(); len(got) != 0 {
		t.Errorf("ActivePods after the shutdown kill = %d pods, want none", len(got))
	}
	h.settle(10) // relists and resyncs
	if c, _ := rt.ContainerByName("uid1", "app"); c.State == runtime.ContainerRunning {
		t.Error("the pod was restarted after its shutdown kill")
	}
	if got := h.agent.TerminatePod("unknown", shutdownOptions(1)); got == nil {
		t.Error("nil channel for an unknown pod")
	} else {
		waitClosed(t, got, "TerminatePod of an unknown pod")
	}
}

func contains(calls []string, prefix string) bool {
	for _, c := range calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

func TestAdmitterRejectsPodWhileShuttingDown_H17(t *testing.T) {
	rt := newFakeRuntime()
	cfg := testConfig(t, rt)
	cfg.Admitters = []PodAdmitter{func(*v1.Pod) (bool, string, string) {
		return false, "NodeShutdown", "Pod was rejected as the node is shutting down."
	}}
	h := runTestAgent(t, cfg)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	h.eventually("pod rejected", func() bool { return h.phase("uid1") == v1.PodFailed })
	p := h.pod("uid1")
	if p.Status.Reason != "NodeShutdown" || p.Status.Message != "Pod was rejected: Pod was rejected as the node is shutting down." {
		t.Errorf("status %q %q", p.Status.Reason, p.Status.Message)
	}
	if contains(rt.Calls(), "RunSandbox") {
		t.Error("a rejected pod got a sandbox")
	}
}

// A node that shut down gracefully and came back: the static pod's
// sandbox and containers were stopped by the shutdown (its last status
// Failed, Terminated); the agent that starts after the boot runs it again
// (the kubelet's Typhoon report: failed static pods left behind).
func TestStaticPodRunsAgainAfterShutdownAndBoot_H17(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			rt := newFakeRuntime()
			h := startAgent(t, rt)
			pod := testPod(policy, nil, "app")
			pod.Annotations = map[string]string{configSourceAnnotation: "file"}
			h.src.ch <- []*v1.Pod{pod}
			h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
			waitClosed(t, h.agent.TerminatePod("uid1", shutdownOptions(30)), "TerminatePod")
			h.eventually("pod Failed after the shutdown kill", func() bool { return h.phase("uid1") == v1.PodFailed })
			old, _ := rt.ContainerByName("uid1", "app")
			h.stop() // the node powers off

			h2 := startAgent(t, rt) // and boots: same manifest, same UID
			h2.src.ch <- []*v1.Pod{pod}
			h2.eventually("static pod Running again", func() bool {
				c, ok := rt.ContainerByName("uid1", "app")
				return ok && c.ID != old.ID && c.State == runtime.ContainerRunning && h2.phase("uid1") == v1.PodRunning
			})
			if p := h2.pod("uid1"); p.Status.Reason != "" {
				t.Errorf("reason %q after the boot, want none", p.Status.Reason)
			}
		})
	}
}

// The shutdown's status: Failed (a pod that already succeeded stays
// Succeeded, as the kubelet's killPods keeps it), its reason and message,
// and DisruptionTarget, whose transition time stays while it holds.
func TestShutdownStatus_H17(t *testing.T) {
	o := shutdownOptions(30)
	f := &podFailure{Reason: o.Reason, Message: o.Message, Conditions: o.Conditions, KeepSucceeded: true}
	tests := []struct {
		name      string
		pod       *v1.Pod
		st        *podState
		f         *podFailure
		wantPhase v1.PodPhase
	}{
		{"running pod fails", testPod("Always", nil, "a"), state(sandboxReady(0), exited("a", 0, 137, t0)), f, v1.PodFailed},
		{"succeeded pod stays Succeeded", testPod("Never", nil, "a"), state(sandboxReady(0), exited("a", 0, 0, t0)), f, v1.PodSucceeded},
		{"an eviction fails a succeeded pod", testPod("Never", nil, "a"), state(sandboxReady(0), exited("a", 0, 0, t0)),
			&podFailure{Reason: "Evicted", Message: "x"}, v1.PodFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := computePodStatus(statusInput{Pod: tt.pod, State: tt.st, Now: t0, Failure: tt.f})
			if s.Phase != tt.wantPhase || s.Reason != tt.f.Reason || s.Message != tt.f.Message {
				t.Errorf("status %s %q %q, want %s %q %q", s.Phase, s.Reason, s.Message, tt.wantPhase, tt.f.Reason, tt.f.Message)
			}
		})
	}
	s := computePodStatus(statusInput{Pod: testPod("Always", nil, "a"), State: state(sandboxReady(0), running("a", 0)), Now: t0, Failure: f})
	later := computePodStatus(statusInput{Pod: testPod("Always", nil, "a"), State: state(sandboxReady(0), running("a", 0)),
		Now: t0.Add(time.Minute), Failure: f, Previous: &s})
	n := 0
	for _, c := range later.Conditions {
		if c.Type == v1.DisruptionTarget {
			n++
			if !c.LastTransitionTime.Time.Equal(t0) || c.Reason != "TerminationByKubelet" {
				t.Errorf("DisruptionTarget %+v, want reason TerminationByKubelet since %v", c, t0)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d DisruptionTarget conditions, want 1: %+v", n, later.Conditions)
	}
}
