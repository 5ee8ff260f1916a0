package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIPodFieldsAllowList: an API pod is never run with a field skiff
// ignores. A pod as kube-apiserver 1.37 fills it in (preemptionPolicy, the
// kube-api-access projected token, with affinity and kubectl run -it's
// stdin and tty) runs; one with pod-level resources (spec.resources, which
// skiff does not implement) fails at admission with reason
// PodFeatureUnsupported and the field named, as the kubelet refuses what
// a node lacks.
func TestAPIPodFieldsAllowList(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.StartAgent(t, AgentOptions{Args: apiAgentArgs(c)})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	waitNodeReady(t, cs)

	ok := apiPod("filled", 1, "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; sleep 100000")
	ok.Spec.AutomountServiceAccountToken = nil
	ok.Spec.Containers[0].Stdin, ok.Spec.Containers[0].TTY = true, true
	ok.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}}}}}}}
	bad := apiPod("podlevel", 1, "sleep 100000")
	bad.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	for _, p := range []*v1.Pod{ok, bad} {
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	filled := waitAPIPod(t, cs, "filled", "Ready", podReady)
	if filled.Spec.PreemptionPolicy == nil || !hasProjectedToken(filled) {
		t.Errorf("the API server did not fill preemptionPolicy and the token volume: %+v", filled.Spec)
	}
	rejected := waitAPIPod(t, cs, "podlevel", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if rejected.Status.Reason != "PodFeatureUnsupported" ||
		rejected.Status.Message != "Pod was rejected: Pod uses fields this node does not implement: spec.resources (not supported by skiff yet)" {
		t.Errorf("podlevel: reason %q message %q", rejected.Status.Reason, rejected.Status.Message)
	}
	if strings.Contains(e.agentLogTail(), "panic") {
		t.Error("agent log has a panic")
	}
}

func hasProjectedToken(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}
