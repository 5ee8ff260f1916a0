package pod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// ephemeralContainers is pods/ephemeralcontainers (kubectl debug),
// upstream's podEphemeralContainersStrategy
// (pkg/registry/core/pod/strategy.go) and
// ValidatePodEphemeralContainersUpdate: an update changes only
// spec.ephemeralContainers, may add containers but never remove or
// change one, and each new one is an ephemeral container upstream
// accepts.
var ephemeralContainers = &generic.UpdateSubresource{
	PrepareForUpdate: prepareEphemeral,
	ValidateUpdate:   validateEphemeral,
}

// prepareEphemeral makes obj old with obj's ephemeral containers, then
// bumps metadata.generation if they changed.
func prepareEphemeral(obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	ephemeral := pod.Spec.EphemeralContainers
	oldPod.Spec.DeepCopyInto(&pod.Spec)
	pod.Spec.EphemeralContainers = ephemeral
	oldPod.Status.DeepCopyInto(&pod.Status)
	metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &oldPod.ObjectMeta)
	updateGeneration(pod, oldPod)
}

// validateEphemeral: the old containers are kept as they were, and the
// new ones have unique names, an image, a target that is one of the
// pod's containers, and none of the fields an ephemeral container may
// not have (upstream's allowedEphemeralContainerFields).
func validateEphemeral(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	path := field.NewPath("spec", "ephemeralContainers")
	var errs field.ErrorList
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	for i, o := range oldPod.Spec.EphemeralContainers {
		switch n, ok := byName[o.Name]; {
		case !ok:
			errs = append(errs, field.Forbidden(path.Index(i), fmt.Sprintf("existing ephemeral containers %q may not be removed", o.Name)))
		case !equality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(path.Index(i), fmt.Sprintf("existing ephemeral containers %q may not be changed", o.Name)))
		}
	}
	names := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		names[c.Name] = true
	}
	for i := range pod.Spec.EphemeralContainers {
		errs = append(errs, validateEphemeralContainer(&pod.Spec.EphemeralContainers[i], names, path.Index(i))...)
	}
	return errs
}

// validateEphemeralContainer checks one ephemeral container against the
// names of the pod's containers (those seen so far are added).
func validateEphemeralContainer(ec *corev1.EphemeralContainer, names map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case ec.Name == "":
		errs = append(errs, field.Required(p.Child("name"), ""))
	case names[ec.Name]:
		errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
	}
	if ec.TargetContainerName != "" && !names[ec.TargetContainerName] {
		errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
	}
	names[ec.Name] = true
	if ec.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	c := ec.EphemeralContainerCommon
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"ports", len(c.Ports) > 0}, {"resources", len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0},
		{"resizePolicy", len(c.ResizePolicy) > 0}, {"restartPolicy", c.RestartPolicy != nil},
		{"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil},
		{"startupProbe", c.StartupProbe != nil}, {"lifecycle", c.Lifecycle != nil},
	} {
		if f.set {
			errs = append(errs, field.Forbidden(p.Child(f.name), "cannot be set for an Ephemeral Container"))
		}
	}
	for j, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j), "cannot be set for an Ephemeral Container"))
		}
	}
	return errs
}
