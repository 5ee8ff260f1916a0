package downward

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func downwardPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u-1",
		Labels:      map[string]string{"tier": "front", "app": "web"},
		Annotations: map[string]string{"note": "say \"hi\"\nnext\tline", "b": "ü"}}}
}

// TestVolumeFieldValue_G7: labels and annotations as sorted key="value"
// lines with Go-quoted values and no trailing newline; subscripts.
func TestVolumeFieldValue_G7(t *testing.T) {
	pod := downwardPod()
	tests := []struct{ path, want string }{
		{"metadata.labels", "app=\"web\"\ntier=\"front\""},
		{"metadata.annotations", "b=\"ü\"\nnote=\"say \\\"hi\\\"\\nnext\\tline\""},
		{"metadata.labels['tier']", "front"},
		{"metadata.annotations['missing']", ""},
		{"metadata.name", "web"},
		{"metadata.namespace", "prod"},
		{"metadata.uid", "u-1"},
	}
	for _, tt := range tests {
		if got, err := VolumeFieldValue(pod, tt.path); err != nil || got != tt.want {
			t.Errorf("VolumeFieldValue(%s) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	if _, err := VolumeFieldValue(pod, "status.podIP"); err == nil || err.Error() != "unsupported fieldPath: status.podIP" {
		t.Errorf("VolumeFieldValue(status.podIP) error = %v", err)
	}
	if got := FormatMap(nil); got != "" {
		t.Errorf("FormatMap(nil) = %q", got)
	}
}
