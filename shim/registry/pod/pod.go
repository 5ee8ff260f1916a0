// Package pod is the shim's Pod kind: skiff's own pod validation
// (podspec.ValidateAPIPod), the status set at creation, the fields a pod
// update may change, metadata.generation, what a status update keeps,
// pods/resize, graceful deletion and the field selectors the kubelet and
// kubectl use.
package pod

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/podspec"
	"github.com/skiffnode/skiff/podspec/qos"
	"github.com/skiffnode/skiff/shim/printers"
	"github.com/skiffnode/skiff/shim/registry/generic"
)

// Kind describes pods, pods/status, pods/resize and pods/ephemeralcontainers.
var Kind = &generic.Kind{
	Table:      printers.Pods(),
	Version:    "v1",
	Resource:   "pods",
	Singular:   "pod",
	Namespaced: true,
	New:        func() runtime.Object { return &corev1.Pod{} },
	NewList:    func() runtime.Object { return &corev1.PodList{} },
	ShortNames: []string{"po"},
	Categories: []string{"all"},
	Status:     true,

	Validate:         validate,
	ValidateUpdate:   validateUpdate,
	PrepareForCreate: prepareForCreate,
	Fields:           selectableFields,
	GracefulDelete:   checkGracefulDelete,
	TriggerField:     "spec.nodeName",
	Trigger:          func(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName },

	// Upstream's podStrategy.PrepareForUpdate: updatePodGeneration.
	PrepareForUpdate:       func(obj, old runtime.Object) { updateGeneration(obj.(*corev1.Pod), old.(*corev1.Pod)) },
	PrepareForStatusUpdate: prepareForStatusUpdate,
	UpdateSubresources:     map[string]*generic.UpdateSubresource{"resize": resize, "ephemeralcontainers": ephemeralContainers},
}

// validate runs skiff's pod validation, less metadata (the generic
// strategy checks that the same way for every kind).
func validate(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	for _, e := range podspec.ValidateAPIPod(obj.(*corev1.Pod)) {
		if !strings.HasPrefix(e.Field, "metadata") {
			errs = append(errs, e)
		}
	}
	return errs
}

// validateUpdate refuses spec changes other than those upstream allows on
// a pod: container images, activeDeadlineSeconds, added tolerations and
// terminationGracePeriodSeconds (the last one only upstream's deletion sets).
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	mutable := oldPod.Spec.DeepCopy()
	copyImages(mutable.Containers, pod.Spec.Containers)
	copyImages(mutable.InitContainers, pod.Spec.InitContainers)
	mutable.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	mutable.TerminationGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
	if len(pod.Spec.Tolerations) >= len(oldPod.Spec.Tolerations) {
		mutable.Tolerations = pod.Spec.Tolerations
	}
	if !equality.Semantic.DeepEqual(*mutable, pod.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"),
			"pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds`")}
	}
	return nil
}

// copyImages sets the images of dst from src where both have the container.
func copyImages(dst, src []corev1.Container) {
	for i := range dst {
		if i < len(src) && src[i].Name == dst[i].Name {
			dst[i].Image = src[i].Image
		}
	}
}

// prepareForCreate sets the status a new pod starts with (the generic
// strategy cleared the one sent).
func prepareForCreate(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qos.Class(pod)}
	pod.Generation = 1
}

// checkGracefulDelete is upstream's podStrategy.CheckGracefulDelete: the
// grace period asked for, else the pod's terminationGracePeriodSeconds;
// zero for pods never scheduled or already terminated.
func checkGracefulDelete(obj runtime.Object, options *metav1.DeleteOptions) bool {
	if options == nil {
		return false
	}
	pod := obj.(*corev1.Pod)
	period := int64(0)
	switch {
	case options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	options.GracePeriodSeconds = &period
	return true
}

// selectableFields is upstream's ToSelectableFields less metadata.
func selectableFields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}
