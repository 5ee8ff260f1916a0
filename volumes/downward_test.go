package volumes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func downwardPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u-1",
			Labels:      map[string]string{"tier": "front", "app": "web"},
			Annotations: map[string]string{"note": "say \"hi\"\nnext\tline", "b": "ü"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}}}},
	}
}

// TestContainerResourceValue_G9: divisors round up, unset limits are the
// node's allocatable.
func TestContainerResourceValue_G9(t *testing.T) {
	pod := downwardPod()
	alloc := v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi"), v1.ResourceCPU: resource.MustParse("4")}
	tests := []struct {
		res, divisor, want string
	}{
		{"limits.cpu", "", "2"},       // 1.5 cores rounded up
		{"limits.cpu", "1m", "1500"},  // in millicores
		{"requests.cpu", "1m", "250"}, //
		{"requests.memory", "1Mi", "64"},
		{"limits.memory", "", "2147483648"}, // unset: allocatable
		{"limits.memory", "1Gi", "2"},
	}
	for _, tt := range tests {
		ref := &v1.ResourceFieldSelector{ContainerName: "app", Resource: tt.res}
		if tt.divisor != "" {
			ref.Divisor = resource.MustParse(tt.divisor)
		}
		if got, err := resourceValue(pod, ref, alloc); err != nil || got != tt.want {
			t.Errorf("%s / %q = %q, %v; want %q", tt.res, tt.divisor, got, err, tt.want)
		}
	}
	if _, err := resourceValue(pod, &v1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}, alloc); err == nil {
		t.Error("unknown container accepted")
	}
	if _, err := resourceValue(pod, &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.gpu"}, alloc); err == nil {
		t.Error("unknown resource accepted")
	}
}

// TestDownwardAPIPayload_G7: items become files with their modes.
func TestDownwardAPIPayload_G7(t *testing.T) {
	mode := int32(0o400)
	got, err := downwardAPIPayload(downwardPod(), []v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "./dir/name", Mode: &mode, FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
	}, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := got["labels"]; string(f.Data) != "app=\"web\"\ntier=\"front\"" || f.Mode != 0o644 {
		t.Errorf("labels = %+v", f)
	}
	if f := got["dir/name"]; string(f.Data) != "web" || f.Mode != 0o400 {
		t.Errorf("dir/name = %+v (paths are cleaned)", f)
	}
}
