package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// fakeClaims serves claim default/data bound to PersistentVolume pv, a
// hostPath at path.
type fakeClaims struct{ path string }

func (f fakeClaims) PersistentVolumeClaim(_ context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "claim-uid"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}, nil
}

func (f fakeClaims) PersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	typ := v1.HostPathDirectoryOrCreate
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-uid"},
		PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: f.path, Type: &typ}}}}, nil
}

// TestAgentVolumesReadOnlyClaim: a readOnly claim reaches the agent as a
// read-only volume (every mount of it read-only), a writable one as
// writable; both are the PersistentVolume's directory.
func TestAgentVolumesReadOnlyClaim(t *testing.T) {
	data := filepath.Join(t.TempDir(), "pv")
	m, err := volumes.New(volumes.Config{PodsDir: filepath.Join(t.TempDir(), "pods"), Claims: fakeClaims{path: data}})
	if err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{true, false} {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: types.UID(fmt.Sprint("uid-", readOnly))},
			Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: readOnly}}}}},
		}
		vols, err := agentVolumes{m}.SetUp(context.Background(), pod)
		if err != nil {
			t.Fatal(err)
		}
		if want := (agent.PodVolume{HostPath: data, ReadOnly: readOnly}); vols["data"] != want {
			t.Errorf("readOnly %v: volume %+v, want %+v", readOnly, vols["data"], want)
		}
	}
}
