package pod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestUpdateGeneration: an update of the main resource bumps
// metadata.generation when the spec changes (upstream's
// updatePodGeneration), not for metadata, and not for a generation sent.
func TestUpdateGeneration(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*corev1.Pod)
		wantGen int64
	}{
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:1.37" }, 2},
		{"added toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, 2},
		{"labels only", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }, 1},
		{"generation sent", func(p *corev1.Pod) { p.Generation = 7 }, 1},
		{"status sent (ignored)", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := runningPod()
			sent := old.DeepCopy()
			tc.change(sent)
			if err := beforeUpdate("", sent, old); err != nil {
				t.Fatal(err)
			}
			if sent.Generation != tc.wantGen {
				t.Errorf("generation %d, want %d", sent.Generation, tc.wantGen)
			}
		})
	}
}

// TestStatusUpdateKeepsResizeFields: pods/status keeps what a node writes
// for a resize (allocatedResources, resources, the resize conditions and
// their observedGeneration), backfills a dropped QoS class and cleared
// observedGenerations as upstream, and ignores spec changes (no
// generation bump).
func TestStatusUpdateKeepsResizeFields(t *testing.T) {
	old := runningPod()
	old.Generation = 2
	old.Status.ObservedGeneration = 2
	old.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 1},
		{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: 2},
	}
	sent := old.DeepCopy()
	sent.Spec.Containers[0].Image = "nginx"
	sent.Status.QOSClass = ""
	sent.Status.ObservedGeneration = 0
	allocated := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	sent.Status.ContainerStatuses[0].AllocatedResources = allocated
	sent.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: allocated}
	sent.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, ObservedGeneration: 2},
		{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue},
	}
	if err := beforeUpdate("status", sent, old); err != nil {
		t.Fatal(err)
	}
	cs := sent.Status.ContainerStatuses[0]
	if q := cs.AllocatedResources[corev1.ResourceCPU]; q.String() != "150m" || cs.Resources == nil {
		t.Errorf("container status allocatedResources %v resources %v, want them kept", cs.AllocatedResources, cs.Resources)
	}
	if sent.Status.QOSClass != corev1.PodQOSBurstable || sent.Status.ObservedGeneration != 2 {
		t.Errorf("qosClass %q observedGeneration %d, want Burstable and 2 backfilled", sent.Status.QOSClass, sent.Status.ObservedGeneration)
	}
	want := map[corev1.PodConditionType]int64{corev1.PodReady: 1, corev1.PodResizePending: 2, corev1.PodResizeInProgress: 2}
	for _, c := range sent.Status.Conditions {
		if c.ObservedGeneration != want[c.Type] {
			t.Errorf("condition %s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, want[c.Type])
		}
	}
	if len(sent.Status.Conditions) != 3 || sent.Status.Conditions[1].Reason != corev1.PodReasonInfeasible {
		t.Errorf("conditions %+v, want the three sent", sent.Status.Conditions)
	}
	if sent.Spec.Containers[0].Image != "busybox:1.36" || sent.Generation != 2 {
		t.Errorf("image %s generation %d: spec changed through pods/status", sent.Spec.Containers[0].Image, sent.Generation)
	}
}
