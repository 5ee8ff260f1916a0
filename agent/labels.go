package agent

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
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
	annotationHash         = "io.kubernetes.container.hash"
	annotationGracePeriod  = "io.kubernetes.pod.terminationGracePeriod"
	annotationInit         = "io.skiff.container.init"

	// configSourceAnnotation names a pod's source ("api", "file"), as the
	// kubelet's kubernetes.io/config.source.
	configSourceAnnotation = "kubernetes.io/config.source"
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

// containerHash is the hash of what a running container may not change
// under the kubelet: its name and image (the kubelet's HashContainer, which
// since v1.31 hashes only these two fields, so that an agent upgrade or a
// resize never restarts containers). A running container whose recorded
// hash differs from its spec's is restarted ("definition changed"). Pure.
func containerHash(c *v1.Container) string {
	b, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image}) // cannot fail
	h := fnv.New32a()
	_, _ = h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// definitionChanged reports whether running container cs was created from
// another definition of c (its image changed). A container without the
// hash annotation (created by an older skiff) is taken as unchanged.
func definitionChanged(c *v1.Container, cs *runtime.ContainerStatus) bool {
	h, ok := cs.Annotations[annotationHash]
	return ok && h != containerHash(c)
}
