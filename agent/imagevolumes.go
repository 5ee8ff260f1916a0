package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// ensureImageVolumes makes the images of the image volumes c mounts
// present, as the kubelet pulls them before it starts a container: with
// each volume's pullPolicy and the pod's pull secrets, the events on the
// pod, the back-off shared with containers of the same image. It returns
// the image ID to mount by volume name. An error is the image's (an
// *imageError): only the containers that mount the volume wait on it.
func (w *podWorker) ensureImageVolumes(ctx context.Context, c *v1.Container) (map[string]string, error) {
	var ids map[string]string
	for _, vm := range c.VolumeMounts {
		src := imageVolume(w.pod, vm.Name)
		if src == nil {
			continue
		}
		if _, done := ids[vm.Name]; done {
			continue
		}
		// A container without a name: the image's events go on the pod.
		id, err := w.ensureImage(ctx, &v1.Container{Image: src.Reference, ImagePullPolicy: src.PullPolicy})
		if err != nil {
			return nil, err
		}
		if ids == nil {
			ids = map[string]string{}
		}
		ids[vm.Name] = id
	}
	return ids, nil
}

// imageVolume is the image source of pod's volume name, nil if it is not
// an image volume.
func imageVolume(pod *v1.Pod, name string) *v1.ImageVolumeSource {
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Name == name {
			return v.Image
		}
	}
	return nil
}
