package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/volumes"
)

// TestAgentVolumesTranslates: the adapter hands the agent the manager's
// volumes, its set-up failure with the same FailedMount message, and its
// size limit violation with the same eviction message.
func TestAgentVolumesTranslates(t *testing.T) {
	podsDir := t.TempDir()
	m, err := volumes.New(volumes.Config{PodsDir: podsDir, Objects: objects.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	av := agentVolumes{m}
	limit := resource.MustParse("16Ki")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid1"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}},
		}},
	}
	ctx := context.Background()
	vols, err := av.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.SetUp(ctx, pod)
	if len(vols) != 1 || vols["cache"].HostPath != want["cache"].HostPath || vols["cache"].ReadOnly != want["cache"].ReadOnly {
		t.Errorf("volumes %+v, want %+v", vols, want)
	}
	if v, err := av.CheckSizeLimits(pod); v != nil || err != nil {
		t.Errorf("under the limit: %+v, %v", v, err)
	}
	if err := os.WriteFile(filepath.Join(vols["cache"].HostPath, "big"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := av.CheckSizeLimits(pod)
	mv, _ := m.CheckSizeLimits(pod)
	if err != nil || v == nil || mv == nil || v.Message() != mv.Message() || v.Used != mv.Used {
		t.Errorf("over the limit: %+v, %v; want %+v", v, err, mv)
	}

	missing := pod.DeepCopy()
	missing.UID = "uid2"
	missing.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "absent"},
	}}}}
	_, err = av.SetUp(ctx, missing)
	_, merr := m.SetUp(ctx, missing)
	var se *agent.VolumeSetUpError
	if !errors.As(err, &se) || se.Volume != "cfg" || merr == nil || err.Error() != merr.Error() {
		t.Errorf("set-up error %v (%T), want an *agent.VolumeSetUpError reading %v", err, err, merr)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	other := pod.DeepCopy()
	other.UID = "uid3"
	if _, err := av.SetUp(cancelled, other); !errors.Is(err, context.Canceled) || errors.As(err, &se) {
		t.Errorf("cancelled set-up: %v, want context.Canceled as it is", err)
	}
}
