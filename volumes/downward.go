package volumes

import (
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/downward"
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
			val, err = downward.VolumeFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = resourceValue(pod, it.ResourceFieldRef, allocatable)
		}
		if err != nil {
			return nil, err
		}
		out[filepath.Clean(it.Path)] = file{Data: []byte(val), Mode: mode}
	}
	return out, nil
}

// resourceValue is the kubelet's
// ExtractResourceValueByContainerNameAndNodeAllocatable: the named
// container's (app or init) value, with the node's allocatable for unset
// limits.
func resourceValue(pod *v1.Pod, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	c, _ := downward.FindContainer(pod, ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("container %s not found", ref.ContainerName)
	}
	return downward.ResourceValue(ref, c, allocatable)
}
