package agent

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/internal/nodefeatures"
)

func rule(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

// TestContainerShouldRestart: upstream's ContainerShouldRestart table: a
// matching Restart rule first, then the container's restartPolicy, then
// the pod's.
func TestContainerShouldRestart(t *testing.T) {
	restartOn42 := []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	restartNotIn0 := []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}
	for _, tc := range []struct {
		name      string
		podPolicy v1.RestartPolicy
		policy    *v1.ContainerRestartPolicy
		rules     []v1.ContainerRestartRule
		exit      int32
		want      bool
	}{
		{"pod Always", v1.RestartPolicyAlways, nil, nil, 0, true},
		{"pod OnFailure, exit 0", v1.RestartPolicyOnFailure, nil, nil, 0, false},
		{"pod OnFailure, exit 1", v1.RestartPolicyOnFailure, nil, nil, 1, true},
		{"pod Never", v1.RestartPolicyNever, nil, nil, 1, false},
		{"container Never under pod Always", v1.RestartPolicyAlways, ptr.To(v1.ContainerRestartPolicyNever), nil, 1, false},
		{"container Always under pod Never", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyAlways), nil, 0, true},
		{"container OnFailure, exit 0", v1.RestartPolicyAlways, ptr.To(v1.ContainerRestartPolicyOnFailure), nil, 0, false},
		{"Never with Restart on 42: 42", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), restartOn42, 42, true},
		{"Never with Restart on 42: 1", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), restartOn42, 1, false},
		{"Never with Restart NotIn 0: 3", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), restartNotIn0, 3, true},
		{"Never with Restart NotIn 0: 0", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), restartNotIn0, 0, false},
		{"rules without a container policy are not evaluated", v1.RestartPolicyNever, nil, restartOn42, 42, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.podPolicy, nil, "a")
			c := &pod.Spec.Containers[0]
			c.RestartPolicy, c.RestartPolicyRules = tc.policy, tc.rules
			if got := containerShouldRestart(c, pod, tc.exit); got != tc.want {
				t.Errorf("containerShouldRestart(exit %d) = %t, want %t", tc.exit, got, tc.want)
			}
		})
	}
}

// TestPlanWithRestartRules: the planner restarts per container rules and
// the pod ends when no container will restart, as the kubelet's getPhase
// with ContainerRestartRules.
func TestPlanWithRestartRules(t *testing.T) {
	never := ptr.To(v1.ContainerRestartPolicyNever)
	restartOn42 := []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	for _, tc := range []struct {
		name      string
		podPolicy v1.RestartPolicy
		setup     func(p *v1.Pod)
		st        *podState
		terminal  v1.PodPhase
		startApp  []int
		startInit int
	}{
		{
			name: "pod Always, a: Never, exited 1, b running: a stays down", podPolicy: v1.RestartPolicyAlways,
			setup: func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy = never },
			st:    state(sandboxReady(0), exited("a", 0, 1, t0), running("b", 0)), startInit: -1,
		},
		{
			name: "pod Always, a and b Never, both exited: Failed", podPolicy: v1.RestartPolicyAlways,
			setup: func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy, p.Spec.Containers[1].RestartPolicy = never, never },
			st:    state(sandboxReady(0), exited("a", 0, 1, t0), exited("b", 0, 0, t0)), terminal: v1.PodFailed, startInit: -1,
		},
		{
			name: "pod Never, a: Never with Restart on 42, exited 42: restarts", podPolicy: v1.RestartPolicyNever,
			setup: func(p *v1.Pod) {
				p.Spec.Containers[0].RestartPolicy, p.Spec.Containers[0].RestartPolicyRules = never, restartOn42
			},
			st: state(sandboxReady(0), exited("a", 0, 42, t0), exited("b", 0, 0, t0)), startApp: []int{0}, startInit: -1,
		},
		{
			name: "pod Never, a: Always, b exited 0: a restarts, not terminal", podPolicy: v1.RestartPolicyNever,
			setup: func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways) },
			st:    state(sandboxReady(0), exited("a", 0, 0, t0), exited("b", 0, 0, t0)), startApp: []int{0}, startInit: -1,
		},
		{
			name: "pod Always, init: Never, failed: Failed", podPolicy: v1.RestartPolicyAlways,
			setup: func(p *v1.Pod) { p.Spec.InitContainers[0].RestartPolicy = never },
			st:    state(sandboxReady(0), exited("i", 0, 1, t0)), terminal: v1.PodFailed, startInit: -1,
		},
		{
			name: "pod Never, init: OnFailure, failed: retried", podPolicy: v1.RestartPolicyNever,
			setup: func(p *v1.Pod) { p.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyOnFailure) },
			st:    state(sandboxReady(0), exited("i", 0, 1, t0)), startInit: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.podPolicy, []string{"i"}, "a", "b")
			tc.setup(pod)
			a := computePodActions(pod, tc.st, t0.Add(time.Minute), newBackoff(), planExtras{})
			if got := terminalPhase(pod, tc.st.latestIn("sb"), nil); got != tc.terminal || a.Terminal != (tc.terminal != "") {
				t.Fatalf("terminal %q (plan %t), want %q", got, a.Terminal, tc.terminal)
			}
			if !slices.Equal(a.StartApp, tc.startApp) || a.StartInit != tc.startInit {
				t.Errorf("StartApp %v StartInit %d, want %v %d", a.StartApp, a.StartInit, tc.startApp, tc.startInit)
			}
		})
	}
}

// TestProbeKillRestartsByContainerPolicy: a container killed for a failed
// liveness probe restarts per its own restartPolicy when set (rules are
// not evaluated), else the pod's.
func TestProbeKillRestartsByContainerPolicy(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	pod.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
	cs := running("a", 0)
	x := planExtras{ProbeFailed: map[string]probeFailure{cs.ID: {Probe: "liveness"}}}
	a := computePodActions(pod, state(sandboxReady(0), cs), t0, newBackoff(), x)
	if len(a.Unhealthy) != 1 || a.Unhealthy[0].Restart || a.Unhealthy[0].Message != "Container a failed liveness probe" {
		t.Errorf("Unhealthy %+v, want one kill without restart", a.Unhealthy)
	}
}

// TestDeclaredFeaturesFailure: a RestartAllContainers rule needs a node
// feature skiff does not declare: the kubelet's PodFeatureUnsupported.
func TestDeclaredFeaturesFailure(t *testing.T) {
	declared, err := nodefeatures.New("v1.37.2", nodefeatures.Implemented())
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(v1.RestartPolicyNever, nil, "a")
	if f := declaredFeaturesFailure(pod, declared); f != nil {
		t.Fatalf("plain pod refused: %+v", f)
	}
	pod.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
	pod.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 3)}
	f := declaredFeaturesFailure(pod, declared)
	if f == nil || f.Reason != "PodFeatureUnsupported" || f.Message != "Pod was rejected: Pod requires node features that are not available: RestartAllContainersOnContainerExits" {
		t.Errorf("failure %+v", f)
	}
}

// TestUnsupportedFieldsFailure: an API pod with a field skiff does not
// implement is refused with the fields named; static pods (checked when
// read) and API pods already running here are not.
func TestUnsupportedFieldsFailure(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	pod.Annotations = map[string]string{configSourceAnnotation: "api"}
	pod.Spec.RuntimeClassName = ptr.To("gvisor")
	f := unsupportedFieldsFailure(pod, false)
	if f == nil || f.Reason != "PodFeatureUnsupported" ||
		f.Message != "Pod was rejected: Pod uses fields this node does not implement: spec.runtimeClassName (not supported by skiff yet)" {
		t.Errorf("failure %+v", f)
	}
	if f := unsupportedFieldsFailure(pod, true); f != nil {
		t.Errorf("a running API pod refused: %+v", f)
	}
	pod.Annotations[configSourceAnnotation] = "file"
	if f := unsupportedFieldsFailure(pod, false); f != nil {
		t.Errorf("a static pod refused: %+v", f)
	}
}
