package agent

import (
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// Labels and annotations skiff puts on sandboxes and containers. The
// io.kubernetes.* keys are the kubelet's, so existing tooling recognises
// skiff's objects; io.skiff.managed marks what skiff created (A.4).
const (
	labelManaged       = "io.skiff.managed"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"

	annotationRestartCount = "io.kubernetes.container.restartCount"
	annotationGracePeriod  = "io.kubernetes.pod.terminationGracePeriod"
	annotationInit         = "io.skiff.container.init"
)

// managedSelector selects every object skiff created.
func managedSelector() map[string]string { return map[string]string{labelManaged: "true"} }

// podSelector selects the objects of one pod.
func podSelector(uid string) map[string]string {
	return map[string]string{labelManaged: "true", labelPodUID: uid}
}

func sandboxLabels(pod *v1.Pod) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[labelManaged] = "true"
	l[labelPodName] = pod.Name
	l[labelPodNamespace] = pod.Namespace
	l[labelPodUID] = string(pod.UID)
	return l
}

func sandboxAnnotations(pod *v1.Pod) map[string]string {
	a := maps.Clone(pod.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[annotationGracePeriod] = strconv.FormatInt(gracePeriod(pod), 10)
	return a
}

func containerLabels(pod *v1.Pod, name string) map[string]string {
	return map[string]string{
		labelManaged:       "true",
		labelPodName:       pod.Name,
		labelPodNamespace:  pod.Namespace,
		labelPodUID:        string(pod.UID),
		labelContainerName: name,
	}
}

// gracePeriod is the pod's termination grace period in seconds (A.43).
func gracePeriod(pod *v1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}
