package pod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// prepareForStatusUpdate is what upstream's podStatusStrategy.PrepareForUpdate
// adds to keeping the spec and owner references (the generic status
// strategy's part): the QoS class recorded at creation is backfilled when
// a client drops it, and so are observedGeneration values a client clears
// (preserveOldObservedGeneration). Everything else of the status is kept
// as sent, the resize fields a node writes included:
// containerStatuses[].allocatedResources and .resources, and the
// PodResizePending and PodResizeInProgress conditions.
func prepareForStatusUpdate(obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = oldPod.Status.QOSClass
	}
	preserveObservedGeneration(pod, oldPod)
}

// preserveObservedGeneration is upstream's preserveOldObservedGeneration:
// a status.observedGeneration of 0 takes old's, and a condition's 0 takes
// that of old's condition of its type in the same position among the
// conditions of that type.
func preserveObservedGeneration(pod, oldPod *corev1.Pod) {
	if pod.Status.ObservedGeneration == 0 {
		pod.Status.ObservedGeneration = oldPod.Status.ObservedGeneration
	}
	oldGenerations := map[corev1.PodConditionType][]int64{}
	for _, c := range oldPod.Status.Conditions {
		oldGenerations[c.Type] = append(oldGenerations[c.Type], c.ObservedGeneration)
	}
	for i, c := range pod.Status.Conditions {
		oldGeneration := int64(0)
		if gens := oldGenerations[c.Type]; len(gens) > 0 {
			oldGeneration, oldGenerations[c.Type] = gens[0], gens[1:]
		}
		if c.ObservedGeneration == 0 {
			pod.Status.Conditions[i].ObservedGeneration = oldGeneration
		}
	}
}
