package pod

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ephemeralPod(ecs ...corev1.EphemeralContainer) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "app", Image: "busybox"}},
		EphemeralContainers: ecs,
	}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func debugger(name string, mod func(*corev1.EphemeralContainer)) corev1.EphemeralContainer {
	ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox",
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}, TargetContainerName: "app"}
	if mod != nil {
		mod(&ec)
	}
	return ec
}

// TestEphemeralContainersUpdate: only spec.ephemeralContainers changes
// (the generation with it); containers may be added, not removed or
// changed; a new one is checked as upstream checks ephemeral containers.
func TestEphemeralContainersUpdate(t *testing.T) {
	old := ephemeralPod(debugger("dbg1", nil))
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string // "" for valid
	}{
		{"add one", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", nil)), ""},
		{"add an interactive one", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) {
			c.Stdin, c.TTY = true, true
		})), ""},
		{"remove one", ephemeralPod(), `existing ephemeral containers "dbg1" may not be removed`},
		{"change one", ephemeralPod(debugger("dbg1", func(c *corev1.EphemeralContainer) { c.Image = "other" })), `"dbg1" may not be changed`},
		{"a taken name", ephemeralPod(debugger("dbg1", nil), debugger("app", nil)), "Duplicate value"},
		{"no image", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) { c.Image = "" })), "image: Required"},
		{"no such target", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) { c.TargetContainerName = "x" })), "targetContainerName: Not found"},
		{"ports", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		})), "ports: Forbidden: cannot be set for an Ephemeral Container"},
		{"a probe", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) { c.ReadinessProbe = &corev1.Probe{} })),
			"readinessProbe: Forbidden"},
		{"a path for a name", ephemeralPod(debugger("dbg1", nil), debugger("../../etc", nil)), "spec.ephemeralContainers[1].name: Invalid value"},
		{"a missing volume", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "rel"}}
		})), "spec.ephemeralContainers[1].volumeMounts[0]"},
		{"another ephemeral container as target", ephemeralPod(debugger("dbg1", nil), debugger("dbg2", func(c *corev1.EphemeralContainer) {
			c.TargetContainerName = "dbg1"
		})), "targetContainerName: Not found"},
	} {
		pod := tc.pod.DeepCopy()
		pod.Labels = map[string]string{"changed": "too"}
		pod.Spec.Containers[0].Image = "not-taken"
		prepareEphemeral(pod, old.DeepCopy())
		if pod.Spec.Containers[0].Image != "busybox" || pod.Labels["a"] != "b" {
			t.Errorf("%s: a change beside the ephemeral containers was kept: %+v", tc.name, pod)
		}
		errs := validateEphemeral(pod, old)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: %v", tc.name, errs)
		case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
			t.Errorf("%s: %v, want %q", tc.name, errs, tc.want)
		}
	}
	mirror := ephemeralPod()
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	if errs := validateEphemeral(ephemeralPod(debugger("dbg1", nil)), mirror); len(errs) == 0 || !strings.Contains(errs[0].Error(), "static pods do not support ephemeral containers") {
		t.Errorf("a mirror pod: %v", errs)
	}
	added := ephemeralPod(debugger("dbg1", nil), debugger("dbg2", nil))
	prepareEphemeral(added, old.DeepCopy())
	if added.Generation != old.Generation+1 {
		t.Errorf("generation %d after adding a container, want %d", added.Generation, old.Generation+1)
	}
}
