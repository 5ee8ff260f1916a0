package volumes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestMemoryVolumeSize_G14: allocatable, lowered to the pod's memory limit
// (when every container has one) and to sizeLimit.
func TestMemoryVolumeSize_G14(t *testing.T) {
	mi := func(n int64) int64 { return n << 20 }
	lim := func(s string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(s)}}
	}
	always := v1.ContainerRestartPolicyAlways
	alloc := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	tests := []struct {
		name   string
		inits  []v1.Container
		apps   []v1.Container
		size   string
		alloc  v1.ResourceList
		wantMi int64
	}{
		{"no limits: allocatable", nil, []v1.Container{{}}, "", alloc, 1024},
		{"no limits, no allocatable: kernel default", nil, []v1.Container{{}}, "", nil, 0},
		{"sum of app limits", nil, []v1.Container{{Resources: lim("64Mi")}, {Resources: lim("32Mi")}}, "", alloc, 96},
		{"one container without a limit: allocatable", nil, []v1.Container{{Resources: lim("64Mi")}, {}}, "", alloc, 1024},
		{"a bigger init container", []v1.Container{{Resources: lim("200Mi")}}, []v1.Container{{Resources: lim("64Mi")}}, "", alloc, 200},
		{"sidecars add up", []v1.Container{{Resources: lim("16Mi"), RestartPolicy: &always}}, []v1.Container{{Resources: lim("64Mi")}}, "", alloc, 80},
		{"sizeLimit lower", nil, []v1.Container{{Resources: lim("64Mi")}}, "8Mi", alloc, 8},
		{"sizeLimit higher than the pod's limit", nil, []v1.Container{{Resources: lim("64Mi")}}, "128Mi", alloc, 64},
		{"pod limit above allocatable", nil, []v1.Container{{Resources: lim("2Gi")}}, "", alloc, 1024},
		{"sizeLimit alone", nil, []v1.Container{{}}, "8Mi", nil, 8},
	}
	for _, tt := range tests {
		pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tt.inits, Containers: tt.apps}}
		var size *resource.Quantity
		if tt.size != "" {
			q := resource.MustParse(tt.size)
			size = &q
		}
		if got := memoryVolumeSize(pod, size, tt.alloc); got != mi(tt.wantMi) {
			t.Errorf("%s: size = %d, want %dMi", tt.name, got, tt.wantMi)
		}
	}
}
