package agent

import (
	"testing"
)

// TestContainerSpecStdinAndHash: stdin, stdinOnce and tty reach the
// runtime as the pod asks (kubectl attach -i needs stdinOnce to keep the
// output of a container whose stdin closed), and the container carries the
// hash of its name and image (definitionChanged).
func TestContainerSpecStdinAndHash(t *testing.T) {
	pod := testPod("Always", nil, "app")
	c := &pod.Spec.Containers[0]
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	spec, err := containerSpec(pod, c, 0, "sha256:img", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Stdin || !spec.StdinOnce || !spec.TTY {
		t.Errorf("stdin %t stdinOnce %t tty %t, want all true", spec.Stdin, spec.StdinOnce, spec.TTY)
	}
	if got, want := spec.Annotations[annotationHash], containerHash(c); got != want || got == "" {
		t.Errorf("hash annotation %q, want %q", got, want)
	}
	other := *c
	other.Image = "img2"
	if containerHash(&other) == containerHash(c) {
		t.Error("another image gives the same hash")
	}
	other = *c
	other.Args = []string{"x"}
	if containerHash(&other) != containerHash(c) {
		t.Error("args changed the hash: only name and image count, as in the kubelet")
	}
}
