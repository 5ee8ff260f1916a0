package pod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/podspec"
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

// validateEphemeral: a static pod has none; the old containers are kept
// as they were; each new one is valid as a container of the pod would be
// (podspec: its name, image, mounts of the pod's volumes, env, security
// context, ...), targets one of the pod's containers or init containers,
// and has none of the fields an ephemeral container may not have
// (upstream's allowedEphemeralContainerFields).
func validateEphemeral(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	path := field.NewPath("spec", "ephemeralContainers")
	if _, mirror := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; mirror && len(pod.Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(path, "static pods do not support ephemeral containers")}
	}
	var errs field.ErrorList
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	existing := map[string]bool{}
	for i, o := range oldPod.Spec.EphemeralContainers {
		existing[o.Name] = true
		switch n, ok := byName[o.Name]; {
		case !ok:
			errs = append(errs, field.Forbidden(path.Index(i), fmt.Sprintf("existing ephemeral containers %q may not be removed", o.Name)))
		case !equality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(path.Index(i), fmt.Sprintf("existing ephemeral containers %q may not be changed", o.Name)))
		}
	}
	targets := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		targets[c.Name] = true
	}
	isNew := map[int]bool{}
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if existing[ec.Name] {
			continue
		}
		isNew[i] = true
		if ec.TargetContainerName != "" && !targets[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(path.Index(i).Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, forbiddenEphemeralFields(ec, path.Index(i))...)
	}
	return append(errs, validateAsContainers(pod, isNew)...)
}

// forbiddenEphemeralFields are the errors of the fields an ephemeral
// container may not set.
func forbiddenEphemeralFields(ec *corev1.EphemeralContainer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	c := ec.EphemeralContainerCommon
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"ports", len(c.Ports) > 0}, {"resources", len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 || len(c.Resources.Claims) > 0},
		{"resizePolicy", len(c.ResizePolicy) > 0}, {"restartPolicy", c.RestartPolicy != nil}, {"restartPolicyRules", len(c.RestartPolicyRules) > 0},
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

// validateAsContainers validates the pod with its ephemeral containers
// as app containers (less the fields forbiddenEphemeralFields reports and
// the interactive ones, which an ephemeral container may set)
// through podspec, and returns the errors of those isNew marks, at their
// ephemeral paths: a name unique among all containers and a DNS label,
// an image, mounts of the pod's volumes at absolute paths, and every
// other check a container gets.
func validateAsContainers(pod *corev1.Pod, isNew map[int]bool) field.ErrorList {
	if len(isNew) == 0 {
		return nil
	}
	probe := pod.DeepCopy()
	base := len(probe.Spec.Containers)
	for _, ec := range probe.Spec.EphemeralContainers {
		c := corev1.Container(ec.EphemeralContainerCommon)
		c.Ports, c.Resources, c.ResizePolicy, c.RestartPolicy, c.RestartPolicyRules = nil, corev1.ResourceRequirements{}, nil, nil, nil
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
		c.Stdin, c.StdinOnce, c.TTY = false, false, false // allowed to ephemeral containers (kubectl debug -it)
		for j := range c.VolumeMounts {
			c.VolumeMounts[j].SubPath, c.VolumeMounts[j].SubPathExpr = "", ""
		}
		probe.Spec.Containers = append(probe.Spec.Containers, c)
	}
	probe.Spec.EphemeralContainers = nil
	var errs field.ErrorList
	for _, e := range podspec.ValidateAPIPod(probe) {
		for i := range isNew {
			prefix := fmt.Sprintf("spec.containers[%d]", base+i)
			if e.Field == prefix || strings.HasPrefix(e.Field, prefix+".") {
				e.Field = fmt.Sprintf("spec.ephemeralContainers[%d]", i) + strings.TrimPrefix(e.Field, prefix)
				errs = append(errs, e)
			}
		}
	}
	return errs
}
