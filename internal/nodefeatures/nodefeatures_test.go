package nodefeatures

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDeclared(t *testing.T) {
	tests := []struct {
		name        string
		version     string
		implemented []string
		want        []string
	}{
		{"skiff's", "v1.37.2+skiff", Implemented(), []string{"InPlacePodVerticalScalingInitContainers"}},
		{"none", "v1.37.2", nil, nil},
		{"sorted, unknown names ignored", "v1.37.2", []string{"RestartAllContainersOnContainerExits", "NoSuchFeature", "InPlacePodVerticalScalingInitContainers"},
			[]string{"InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.version, tt.implemented)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Declared(); !slices.Equal(got, tt.want) {
				t.Errorf("Declared() = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := New("not-a-version", nil); err == nil {
		t.Error("New(not-a-version): no error")
	}
}

func TestMissingForPod(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	restartAll := v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", RestartPolicy: &always,
		RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}}
	plain := v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	s, err := New("v1.37.2", Implemented())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want []string
	}{
		{"plain pod", &plain, nil},
		{"RestartAllContainers rule", &restartAll, []string{"RestartAllContainersOnContainerExits"}},
	}
	for _, tt := range tests {
		got, err := s.MissingForPod(tt.pod)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: MissingForPod = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestMissingForUpdate(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := func(initCPU string, sidecar bool) *v1.Pod {
		c := v1.Container{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(initCPU)}}}
		if sidecar {
			c.RestartPolicy = &always
		}
		return &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{c}, Containers: []v1.Container{{Name: "app"}}}}
	}
	tests := []struct {
		name        string
		implemented []string
		old, new    *v1.Pod
		want        []string
	}{
		{"init container resized, declared", Implemented(), pod("100m", false), pod("200m", false), nil},
		{"init container resized, not declared", nil, pod("100m", false), pod("200m", false), []string{"InPlacePodVerticalScalingInitContainers"}},
		{"sidecar resized needs nothing", nil, pod("100m", true), pod("200m", true), nil},
		{"unchanged", nil, pod("100m", false), pod("100m", false), nil},
	}
	for _, tt := range tests {
		s, err := New("v1.37.2", tt.implemented)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.MissingForUpdate(tt.old, tt.new)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: MissingForUpdate = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
