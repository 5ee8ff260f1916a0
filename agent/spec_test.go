package agent

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiffnode/skiff/runtime"
)

// TestContainerSpecStdinAndHash: stdin, stdinOnce and tty reach the
// runtime as the pod asks (kubectl attach -i needs stdinOnce to keep the
// output of a container whose stdin closed), and the container carries the
// hash of its name and image (definitionChanged).
func TestContainerSpecStdinAndHash(t *testing.T) {
	pod := testPod("Always", nil, "app")
	c := &pod.Spec.Containers[0]
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	spec, err := containerSpec(pod, c, 0, "sha256:img", nil, false, containerLimits{})
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

// TestContainerLimits: a container's resources as the runtime applies
// them: a cpu limit becomes a CFS quota per the kubelet's
// cpuCFSQuotaPeriod (CustomCPUCFSQuotaPeriod; 100ms when unset), at least
// 1ms; memory.oom.group with OOMGroupKill (cgroup v2).
func TestContainerLimits(t *testing.T) {
	limited := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	tests := []struct {
		name string
		l    containerLimits
		r    v1.ResourceRequirements
		want runtime.Resources
	}{
		{"default period", containerLimits{}, limited, runtime.Resources{CPUShares: 256, CPUPeriod: 100000, CPUQuota: 50000, MemoryLimit: 64 << 20}},
		{"50ms", containerLimits{cpuPeriod: 50000}, limited, runtime.Resources{CPUShares: 256, CPUPeriod: 50000, CPUQuota: 25000, MemoryLimit: 64 << 20}},
		{"1ms: at least the minimum quota", containerLimits{cpuPeriod: 1000}, limited, runtime.Resources{CPUShares: 256, CPUPeriod: 1000, CPUQuota: 1000, MemoryLimit: 64 << 20}},
		{"no limits", containerLimits{cpuPeriod: 50000}, v1.ResourceRequirements{}, runtime.Resources{CPUShares: 2}},
		{"oom group", containerLimits{oomGroupKill: true}, v1.ResourceRequirements{}, runtime.Resources{CPUShares: 2, Unified: map[string]string{"memory.oom.group": "1"}}},
	}
	for _, tt := range tests {
		if got := tt.l.of(tt.r); !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, *got, tt.want)
		}
	}
}

// TestMemoryHigh: MemoryQoS's memory.high with a memoryThrottlingFactor,
// the kubelet's formula: request + factor * (limit or allocatable -
// request), rounded down to a page; "max" for Guaranteed containers or where
// it would not exceed the request (so that a resize clears an earlier one),
// and no key without a factor.
func TestMemoryHigh(t *testing.T) {
	mem := func(req, lim string) v1.ResourceRequirements {
		r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
		if req != "" {
			r.Requests[v1.ResourceMemory] = resource.MustParse(req)
		}
		if lim != "" {
			r.Limits[v1.ResourceMemory] = resource.MustParse(lim)
		}
		return r
	}
	qos := containerLimits{memoryThrottlingFactor: 0.9, allocatableMemory: 1 << 30, pageSize: 4096}
	tests := []struct {
		name string
		l    containerLimits
		r    v1.ResourceRequirements
		want string // "": no memory.high key
	}{
		{"burstable with a limit", qos, mem("64Mi", "128Mi"), "127504384"}, // floor((64Mi + 0.9*64Mi)/4096)*4096
		{"limit only (request defaulted to it): guaranteed, max", qos, mem("128Mi", "128Mi"), "max"},
		{"no limit: allocatable is the base", qos, mem("64Mi", ""), "973078528"},
		{"best effort: 0.9 of allocatable", qos, mem("", ""), "966365184"},
		{"no factor", containerLimits{allocatableMemory: 1 << 30}, mem("64Mi", "128Mi"), ""},
		{"no limit and no allocatable", containerLimits{memoryThrottlingFactor: 0.9}, mem("64Mi", ""), "max"},
		{"factor 1: the limit", containerLimits{memoryThrottlingFactor: 1}, mem("64Mi", "128Mi"), "134217728"},
	}
	for _, tt := range tests {
		got := tt.l.of(tt.r).Unified["memory.high"]
		if got != tt.want {
			t.Errorf("%s: memory.high %q, want %q", tt.name, got, tt.want)
		}
	}
}
