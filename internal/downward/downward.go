// Package downward computes the values of the downward API (checklist
// G.6-G.9) as the kubelet does: pod fields (fieldRef) and container
// resources (resourceFieldRef), for container env (agent) and for
// downwardAPI volumes (volumes) alike, and the field paths pod validation
// (podspec) accepts. Pure functions, safe for concurrent use.
//
// The package is neutral: it imports only k8s.io libraries, so podspec,
// which skiff-apiserver uses too, may import it; it may not import
// node-side or shim packages (the depguard rules in .golangci.yml).
package downward

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FieldValue is the kubelet's podFieldSelectorRuntimeValue for env: one
// label or annotation by subscript, or a scalar pod field (G.6); IP lists
// are comma-separated.
func FieldValue(pod *v1.Pod, path string, podIPs, hostIPs []string) (string, error) {
	if base, key, ok := SplitSubscript(path); ok {
		switch base {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return first(hostIPs), nil
	case "status.hostIPs":
		return strings.Join(hostIPs, ","), nil
	case "status.podIP":
		return first(podIPs), nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// VolumeFieldValue is the kubelet's fieldpath.ExtractFieldPathAsString for
// the fields a downwardAPI volume may show: FieldValue's metadata fields,
// plus all labels or annotations as `key="value"` lines sorted by key,
// values Go-quoted (G.7).
func VolumeFieldValue(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	}
	if strings.HasPrefix(path, "metadata.") {
		return FieldValue(pod, path, nil, nil)
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// FormatMap is the kubelet's fieldpath.FormatMap.
func FormatMap(m map[string]string) string {
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

// ResourceValue is the kubelet's ExtractContainerResourceValue for c: its
// request or limit of fs.Resource divided by the divisor (default 1) and
// rounded up (G.8). Where allocatable is not nil, an unset or zero cpu,
// memory or ephemeral-storage limit reads it (G.9, the kubelet's
// MergeContainerResourceLimits); c is not modified.
func ResourceValue(fs *v1.ResourceFieldSelector, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	divisor := resource.MustParse("1")
	if !fs.Divisor.IsZero() {
		divisor = fs.Divisor
	}
	kind, name, _ := strings.Cut(fs.Resource, ".")
	var list v1.ResourceList
	switch kind {
	case "requests":
		list = c.Resources.Requests
	case "limits":
		list = mergedLimits(c.Resources.Limits, allocatable)
	default:
		return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
	}
	rn := v1.ResourceName(name)
	q := list[rn]
	switch {
	case rn == v1.ResourceCPU:
		return ceilDiv(float64(q.MilliValue()), float64(divisor.MilliValue())), nil
	case rn == v1.ResourceMemory, rn == v1.ResourceEphemeralStorage, strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return ceilDiv(float64(q.Value()), float64(divisor.Value())), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
}

// FindContainer finds name among the pod's app containers, then its init
// containers; isApp says which.
func FindContainer(pod *v1.Pod, name string) (c *v1.Container, isApp bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], false
		}
	}
	return nil, false
}

// mergedLimits returns limits with unset or zero cpu, memory and
// ephemeral-storage limits set from allocatable (a copy when it changes).
func mergedLimits(limits, allocatable v1.ResourceList) v1.ResourceList {
	var out v1.ResourceList
	for _, rn := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[rn]; ok && !q.IsZero() {
			continue
		}
		if a, ok := allocatable[rn]; ok {
			if out == nil {
				out = limits.DeepCopy()
				if out == nil {
					out = v1.ResourceList{}
				}
			}
			out[rn] = a.DeepCopy()
		}
	}
	if out == nil {
		return limits
	}
	return out
}

// ceilDiv is the kubelet's int64(math.Ceil(a / b)) as a decimal string.
func ceilDiv(a, b float64) string {
	return strconv.FormatInt(int64(math.Ceil(a/b)), 10)
}

func first(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// SplitSubscript splits "metadata.labels['key']" into its path and key
// (upstream's fieldpath.SplitMaybeSubscriptedPath); ok is false for a
// path without a subscript.
func SplitSubscript(path string) (base, key string, ok bool) {
	s, found := strings.CutSuffix(path, "']")
	if !found {
		return path, "", false
	}
	base, key, found = strings.Cut(s, "['")
	if !found || base == "" {
		return path, "", false
	}
	return base, key, true
}
