package volumes

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// downwardAPIPayload builds the files of a downwardAPI volume (or
// projection) as the kubelet's downwardapi.CollectData does: each item
// gets its fieldRef or resourceFieldRef value, mode item.Mode or
// defaultMode. allocatable fills unset limits (G.9).
func downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode int32, allocatable v1.ResourceList) (map[string]file, error) {
	out := make(map[string]file, len(items))
	for _, it := range items {
		mode := defaultMode
		if it.Mode != nil {
			mode = *it.Mode
		}
		var (
			val string
			err error
		)
		switch {
		case it.FieldRef != nil:
			val, err = podFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = containerResourceValue(pod, it.ResourceFieldRef, allocatable)
		}
		if err != nil {
			return nil, err
		}
		out[filepath.Clean(it.Path)] = file{Data: []byte(val), Mode: mode}
	}
	return out, nil
}

// podFieldValue is the kubelet's fieldpath.ExtractFieldPathAsString for
// the fields a downwardAPI volume may show (G.7): labels and annotations
// are `key="value"` lines sorted by key, values Go-quoted.
func podFieldValue(pod *v1.Pod, path string) (string, error) {
	if sub, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[sub], nil
	}
	if sub, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[sub], nil
	}
	switch path {
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// subscript splits "prefix['key']" into key.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap is the kubelet's fieldpath.FormatMap.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// containerResourceValue is the kubelet's
// ExtractResourceValueByContainerNameAndNodeAllocatable: the container's
// request or limit (an unset cpu, memory or ephemeral-storage limit is the
// node's allocatable), divided by the divisor and rounded up.
func containerResourceValue(pod *v1.Pod, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	c := findContainer(pod, ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("container %s not found", ref.ContainerName)
	}
	limits := c.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = v1.ResourceList{}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; (!ok || q.IsZero()) && allocatable != nil {
			if a, ok := allocatable[name]; ok {
				limits[name] = a.DeepCopy()
			}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	list := limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q := list[v1.ResourceName(name)]
	switch {
	case name == string(v1.ResourceCPU):
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case name == string(v1.ResourceMemory), name == string(v1.ResourceEphemeralStorage),
		strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
