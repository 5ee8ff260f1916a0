package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ctr builds a container with cpu and memory requests and limits given
// as quantities ("" = unset).
func ctr(name, reqCPU, reqMem, limCPU, limMem string) v1.Container {
	c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}}
	set := func(l v1.ResourceList, n v1.ResourceName, q string) {
		if q != "" {
			l[n] = resource.MustParse(q)
		}
	}
	set(c.Resources.Requests, v1.ResourceCPU, reqCPU)
	set(c.Resources.Requests, v1.ResourceMemory, reqMem)
	set(c.Resources.Limits, v1.ResourceCPU, limCPU)
	set(c.Resources.Limits, v1.ResourceMemory, limMem)
	return c
}

func podOf(init []v1.Container, apps ...v1.Container) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{InitContainers: init, Containers: apps}}
}

func TestClass_D6(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"nothing set", podOf(nil, ctr("a", "", "", "", "")), v1.PodQOSBestEffort},
		{"requests equal limits", podOf(nil, ctr("a", "1", "1Gi", "1", "1Gi")), v1.PodQOSGuaranteed},
		{"limits only (requests default to them)", podOf(nil, ctr("a", "", "", "500m", "64Mi")), v1.PodQOSGuaranteed},
		{"request below limit", podOf(nil, ctr("a", "100m", "1Gi", "1", "1Gi")), v1.PodQOSBurstable},
		{"cpu limit only", podOf(nil, ctr("a", "", "", "1", "")), v1.PodQOSBurstable},
		{"one container unlimited", podOf(nil, ctr("a", "1", "1Gi", "1", "1Gi"), ctr("b", "", "", "", "")), v1.PodQOSBurstable},
		{"init container counts", podOf([]v1.Container{ctr("i", "100m", "", "", "")}, ctr("a", "", "", "", "")), v1.PodQOSBurstable},
		{"guaranteed with guaranteed init", podOf([]v1.Container{ctr("i", "1", "1Gi", "1", "1Gi")}, ctr("a", "2", "1Gi", "2", "1Gi")), v1.PodQOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.pod); got != tt.want {
				t.Errorf("Class = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestClassPodLevel: pod-level resources, when they set cpu or memory,
// decide the class (PodLevelResources), whatever the containers set.
func TestClassPodLevel(t *testing.T) {
	withPod := func(reqCPU, reqMem, limCPU, limMem string, apps ...v1.Container) *v1.Pod {
		p := podOf(nil, apps...)
		r := ctr("", reqCPU, reqMem, limCPU, limMem).Resources
		p.Spec.Resources = &r
		return p
	}
	for _, tt := range []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"pod limits only", withPod("", "", "500m", "64Mi", ctr("a", "", "", "", "")), v1.PodQOSGuaranteed},
		{"pod request below limit", withPod("100m", "64Mi", "500m", "64Mi", ctr("a", "", "", "", "")), v1.PodQOSBurstable},
		{"pod cpu only", withPod("", "", "500m", "", ctr("a", "", "", "", "")), v1.PodQOSBurstable},
		{"pod-level wins over Guaranteed containers", withPod("100m", "", "", "", ctr("a", "1", "1Gi", "1", "1Gi")), v1.PodQOSBurstable},
		{"empty pod level: the containers", withPod("", "", "", "", ctr("a", "1", "1Gi", "1", "1Gi")), v1.PodQOSGuaranteed},
	} {
		if got := Class(tt.pod); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
