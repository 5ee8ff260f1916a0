package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestImageVolume: an image volume (volumes[].image) mounts an OCI
// image read-only into the pod where the runtime supports it (containerd
// 2.1 and later): the container reads the image's files, whole and
// through a subPath, and cannot write them. On a runtime without image
// volumes (containerd 1.6) the pod is refused at admission, with the
// reason.
func TestImageVolume(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	features := e.RuntimeFeatures(t)
	e.WriteManifest(t, "imgvol.yaml", podSpec("imgvol", []string{
		"terminationGracePeriodSeconds: 2",
		"volumes: [{name: tools, image: {reference: " + busyboxImage + ", pullPolicy: IfNotPresent}}]",
	}, nil, []string{
		sleeper("app", "volumeMounts: [{name: tools, mountPath: /img}, {name: tools, mountPath: /sub, subPath: bin}]"),
	}))
	if !features.ImageVolumes {
		p := e.WaitForPod(t, PodName("imgvol"), phaseIs(v1.PodFailed), podStartTimeout)
		if p.Status.Reason != "ImageVolumesNotSupported" || !strings.Contains(p.Status.Message, `volume "tools": image volumes are not supported by the runtime`) {
			t.Errorf("on a runtime without image volumes: reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		return
	}
	p := e.WaitForPod(t, PodName("imgvol"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, p.Name, "app").ID
	if out := e.Exec(t, app, "sh", "-c", "test -x /img/bin/busybox && test -x /sub/busybox && echo ok"); out != "ok\n" {
		t.Errorf("the image's files through the volume and its subPath: %q", out)
	}
	if out := e.Exec(t, app, "sh", "-c", "touch /img/x 2>&1; true"); !strings.Contains(out, "Read-only file system") {
		t.Errorf("writing the image volume gave %q, want EROFS", out)
	}
}
