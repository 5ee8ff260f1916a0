package pod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/podspec/qos"
	"github.com/skiffnode/skiff/shim/registry/generic"
)

// resize is pods/resize, upstream's podResizeStrategy
// (pkg/registry/core/pod/strategy.go) and ValidatePodResize
// (pkg/apis/core/validation/validation.go) of Kubernetes 1.37 with its
// default feature gates: InPlacePodVerticalScaling and
// InPlacePodVerticalScalingInitContainers GA (every init container may be
// resized; NodeDeclaredFeatureValidator admission refuses a non-sidecar
// one's on nodes that do not declare it),
// InPlacePodVerticalScalingMemoryBackedVolumes off (volumes immutable).
// Pod-level resources (spec.resources) are not resized here: skiff refuses
// them in every pod (podspec.Validate, "not supported by skiff yet"),
// which the update's validation of the new pod reports.
var resize = &generic.UpdateSubresource{
	PrepareForUpdate: prepareResize,
	ValidateUpdate:   validateResize,
}

// prepareResize keeps of the request only the containers' and init
// containers' resources and resizePolicy (and spec.resources, refused
// later), the rest from old, as upstream's dropNonResizeUpdates; then
// bumps metadata.generation if the spec changed.
func prepareResize(obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	dropNonResizeUpdates(pod, oldPod)
	updateGeneration(pod, oldPod)
}

// dropNonResizeUpdates makes pod oldPod plus the resize fields of pod.
// Containers added or removed leave pod as sent, and a renamed or
// reordered container its list, for validateResize to refuse.
func dropNonResizeUpdates(pod, oldPod *corev1.Pod) {
	if len(pod.Spec.Containers) != len(oldPod.Spec.Containers) ||
		len(pod.Spec.InitContainers) != len(oldPod.Spec.InitContainers) {
		return
	}
	resources := pod.Spec.Resources
	containers := resizedContainers(pod.Spec.Containers, oldPod.Spec.Containers)
	initContainers := resizedContainers(pod.Spec.InitContainers, oldPod.Spec.InitContainers)
	oldPod.Spec.DeepCopyInto(&pod.Spec)
	pod.Spec.Resources = resources
	pod.Spec.Containers, pod.Spec.InitContainers = containers, initContainers
	oldPod.Status.DeepCopyInto(&pod.Status)
	metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &oldPod.ObjectMeta)
}

// resizedContainers is old (same length as containers) with the resources
// and resizePolicy of containers; containers itself if a name differs.
func resizedContainers(containers, old []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return containers
	}
	merged := make([]corev1.Container, len(old))
	for i := range old {
		if old[i].Name != containers[i].Name {
			return containers
		}
		old[i].DeepCopyInto(&merged[i])
		merged[i].Resources = containers[i].Resources
		merged[i].ResizePolicy = containers[i].ResizePolicy
	}
	return merged
}

// updateGeneration is upstream's updatePodGeneration: a spec change bumps
// metadata.generation (rest.BeforeUpdate has set pod's to old's).
func updateGeneration(pod, oldPod *corev1.Pod) {
	if !equality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		pod.Generation++
	}
}

// validateResize is upstream's ValidatePodResize less what the generic
// strategy already checked (metadata, the new pod's validity): static
// and Windows pods cannot be resized, the QoS class may not change, a pod
// whose running containers report no resources is on a node without
// resize, containers keep their number, names and order, requests and
// limits may be changed but not removed, and only cpu and memory may
// change.
func validateResize(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	if _, ok := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if oldPod.Spec.OS != nil && oldPod.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if podQOS(oldPod) != qos.Class(pod) {
		errs = append(errs, field.Invalid(specPath, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(oldPod) {
		errs = append(errs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}
	if orderErrs := validateContainerOrder(pod, oldPod, specPath); orderErrs != nil {
		return append(errs, orderErrs...)
	}
	for i := range oldPod.Spec.InitContainers {
		errs = append(errs, validateContainerResize(&pod.Spec.InitContainers[i].Resources,
			&oldPod.Spec.InitContainers[i].Resources, specPath.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range oldPod.Spec.Containers {
		errs = append(errs, validateContainerResize(&pod.Spec.Containers[i].Resources,
			&oldPod.Spec.Containers[i].Resources, specPath.Child("containers").Index(i).Child("resources"))...)
	}
	masked := pod.Spec.DeepCopy()
	errs = append(errs, maskResizableChanges(masked, &oldPod.Spec, specPath)...)
	if !equality.Semantic.DeepEqual(pod.Spec.Volumes, oldPod.Spec.Volumes) {
		errs = append(errs, field.Forbidden(specPath.Child("volumes"),
			"volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(errs) > 0 {
		return errs
	}
	if !equality.Semantic.DeepEqual(*masked, oldPod.Spec) {
		return field.ErrorList{field.Forbidden(specPath, "only cpu and memory resources are mutable")}
	}
	return nil
}

// podQOS is upstream's GetPodQOS: the class recorded at creation, else
// the one computed from the spec.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return qos.Class(pod)
}

// resizeSupported is upstream's isPodResizeRequestSupported (version skew
// of the KEP): the node supports resize if the first running container's
// status reports its resources; a pod without running containers may
// always be resized.
func resizeSupported(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

// validateContainerOrder is upstream's validatePodResizeContainerOrdering:
// no container or init container added, removed, renamed or reordered.
func validateContainerOrder(pod, oldPod *corev1.Pod, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name     string
		new, old []corev1.Container
	}{
		{"containers", pod.Spec.Containers, oldPod.Spec.Containers},
		{"initContainers", pod.Spec.InitContainers, oldPod.Spec.InitContainers},
	} {
		path := specPath.Child(list.name)
		if len(list.new) != len(list.old) {
			errs = append(errs, field.Forbidden(path, list.name+" may not be added or removed on resize"))
			continue
		}
		for i := range list.old {
			if list.new[i].Name != list.old[i].Name {
				errs = append(errs, field.Forbidden(path.Index(i).Child("name"), list.name+" may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// validateContainerResize is upstream's: requests and limits may not be
// removed.
func validateContainerResize(resources, old *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(resources.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(path.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(resources.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(path.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

// resourcesRemoved reports whether list lacks a resource of old.
func resourcesRemoved(list, old corev1.ResourceList) bool {
	if len(old) > len(list) {
		return true
	}
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// maskResizableChanges sets the cpu and memory of spec's containers and
// init containers to old's (upstream's dropCPUMemoryResourcesFromContainer
// loops), so that spec equals old if nothing else changed; a container
// that still differs changed another resource, its claims or its
// resizePolicy (which upstream, too, refuses to change here). A
// non-sidecar init container with a RestartContainer resize policy may
// not be resized.
func maskResizableChanges(spec, old *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Containers {
		maskCPUMemory(&spec.Containers[i], &old.Containers[i])
		if !equality.Semantic.DeepEqual(spec.Containers[i], old.Containers[i]) {
			errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range spec.InitContainers {
		c, path := &spec.InitContainers[i], specPath.Child("initContainers").Index(i)
		modified := !equality.Semantic.DeepEqual(*c, old.InitContainers[i])
		maskCPUMemory(c, &old.InitContainers[i])
		if !equality.Semantic.DeepEqual(*c, old.InitContainers[i]) {
			errs = append(errs, field.Forbidden(path, "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if !modified || sidecar {
			continue
		}
		for _, p := range c.ResizePolicy {
			if p.RestartPolicy == corev1.RestartContainer {
				errs = append(errs, field.Forbidden(path, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
			}
		}
	}
	return errs
}

// maskCPUMemory gives c the cpu and memory requests and limits of old,
// keeping its other resources and claims.
func maskCPUMemory(c, old *corev1.Container) {
	c.Resources = corev1.ResourceRequirements{
		Limits:   maskCPUMemoryList(c.Resources.Limits, old.Resources.Limits),
		Requests: maskCPUMemoryList(c.Resources.Requests, old.Resources.Requests),
		Claims:   c.Resources.Claims,
	}
}

// maskCPUMemoryList is upstream's dropCPUMemoryUpdates: a copy of list
// with old's cpu and memory (none where old has none).
func maskCPUMemoryList(list, old corev1.ResourceList) corev1.ResourceList {
	var masked corev1.ResourceList
	switch {
	case list != nil:
		masked = list.DeepCopy()
	case old == nil:
		return nil
	default:
		masked = corev1.ResourceList{}
	}
	delete(masked, corev1.ResourceCPU)
	delete(masked, corev1.ResourceMemory)
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := old[name]; ok {
			masked[name] = q
		}
	}
	return masked
}
