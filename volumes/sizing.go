package volumes

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryVolumeSize is the size in bytes of a memory-backed volume's tmpfs,
// as the kubelet's calculateEmptyDirMemorySize computes it: the node's
// allocatable memory, lowered to the pod's memory limit if the pod has one
// (every container has a limit) and to sizeLimit if set. 0 means no bound
// was known: the tmpfs gets the kernel's default (half of RAM).
func memoryVolumeSize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var size int64
	if q, ok := allocatable[v1.ResourceMemory]; ok {
		size = q.Value()
	}
	lower := func(v int64) {
		if v > 0 && (size == 0 || v <= size) {
			size = v
		}
	}
	if lim, ok := podMemoryLimit(pod); ok {
		lower(lim)
	}
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod-level memory limit of the kubelet's
// ResourceConfigForPod: the sum of the app containers' and sidecars'
// limits, at least each regular init container's (plus the sidecars
// started before it); no limit (false) if any container lacks one.
func podMemoryLimit(pod *v1.Pod) (int64, bool) {
	limit := func(c *v1.Container) (int64, bool) {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0, false
		}
		return q.Value(), true
	}
	var sum, initMax, sidecars int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l, ok := limit(c)
		if !ok {
			return 0, false
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars += l
			continue
		}
		initMax = max(initMax, sidecars+l)
	}
	for i := range pod.Spec.Containers {
		l, ok := limit(&pod.Spec.Containers[i])
		if !ok {
			return 0, false
		}
		sum += l
	}
	return max(sum+sidecars, initMax), true
}
