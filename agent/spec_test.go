package agent

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestContainerSpecStdinAndHash: stdin, stdinOnce and tty reach the
// runtime as the pod asks (kubectl attach -i needs stdinOnce to keep the
// output of a container whose stdin closed), and the container carries the
// hash of its name and image (definitionChanged).
func TestContainerSpecStdinAndHash(t *testing.T) {
	pod := testPod("Always", nil, "app")
	c := &pod.Spec.Containers[0]
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	spec, err := containerSpec(pod, c, 0, "sha256:img", nil, false, 0)
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

// TestContainerResourcesCPUPeriod: a container's cpu limit becomes a CFS
// quota per the kubelet's cpuCFSQuotaPeriod (CustomCPUCFSQuotaPeriod;
// 100ms when unset), at least 1ms; no limit, no quota.
func TestContainerResourcesCPUPeriod(t *testing.T) {
	limited := &v1.Container{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}}
	tests := []struct {
		name          string
		c             *v1.Container
		period        uint64
		quota, wantUS int64
	}{
		{"default period", limited, 0, 50000, 100000},
		{"50ms", limited, 50000, 25000, 50000},
		{"1ms: at least the minimum quota", limited, 1000, 1000, 1000},
		{"no cpu limit", &v1.Container{}, 50000, 0, 0},
	}
	for _, tt := range tests {
		r := containerResources(tt.c, tt.period)
		if r.CPUQuota != tt.quota || r.CPUPeriod != tt.wantUS {
			t.Errorf("%s: quota %d period %d, want %d %d", tt.name, r.CPUQuota, r.CPUPeriod, tt.quota, tt.wantUS)
		}
	}
}
