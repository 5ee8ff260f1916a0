package main

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/skiffnode/skiff/bench/internal/criops"
)

// decodeStartupVolumes splits the manifest of kindStartupVolumes into its
// two documents and decodes them strictly: the ConfigMap, then the Pod.
func decodeStartupVolumes(t *testing.T, name string) (*v1.ConfigMap, *v1.Pod) {
	t.Helper()
	data, err := manifest(name, kindStartupVolumes, 1)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("manifest has %d documents, want 2 (ConfigMap, Pod):\n%s", len(docs), data)
	}
	var cm v1.ConfigMap
	var pod v1.Pod
	if err := yaml.UnmarshalStrict(docs[0], &cm); err != nil || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
		t.Fatalf("first document is not a v1 ConfigMap (%v):\n%s", err, docs[0])
	}
	if err := yaml.UnmarshalStrict(docs[1], &pod); err != nil || pod.Kind != "Pod" || pod.APIVersion != "v1" {
		t.Fatalf("second document is not a v1 Pod (%v):\n%s", err, docs[1])
	}
	return &cm, &pod
}

func TestStartupVolumesManifest(t *testing.T) {
	cm, pod := decodeStartupVolumes(t, "s-stv-0")
	if cm.Name != "s-stv-0-config" || cm.Namespace != agentNamespace || cm.Data["app.conf"] != appConf || len(cm.Data) != 1 {
		t.Errorf("config map = %+v", cm)
	}
	if pod.Name != "s-stv-0" || len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Containers) != 1 || pod.Labels["app"] != "bench-startup" {
		t.Fatalf("pod = %+v", pod)
	}
	vols := map[string]v1.VolumeSource{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v.VolumeSource
	}
	if s := vols["scratch"]; s.EmptyDir == nil {
		t.Errorf("scratch = %+v, want an emptyDir", s)
	}
	if s := vols["config"]; s.ConfigMap == nil || s.ConfigMap.Name != cm.Name {
		t.Errorf("config = %+v, want the manifest's ConfigMap %s", s, cm.Name)
	}
	if s := vols["podinfo"]; s.DownwardAPI == nil || len(s.DownwardAPI.Items) != 2 ||
		s.DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.labels" || s.DownwardAPI.Items[1].FieldRef.FieldPath != "metadata.name" {
		t.Errorf("podinfo = %+v, want a downwardAPI of labels and name", s)
	}
	var mounts []string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.Name+" "+m.MountPath+map[bool]string{true: " ro", false: ""}[m.ReadOnly])
	}
	if want := []string{"scratch /scratch", "config /etc/config ro", "podinfo /etc/podinfo ro"}; !slices.Equal(mounts, want) {
		t.Errorf("app mounts = %v, want %v", mounts, want)
	}
	if len(pod.Spec.InitContainers[0].VolumeMounts) != 0 {
		t.Errorf("init mounts = %v, want none (the floor's init mounts none)", pod.Spec.InitContainers[0].VolumeMounts)
	}
	// Manifests of different pods define different ConfigMaps: skiff
	// rejects an object name defined in two files.
	if other, _ := decodeStartupVolumes(t, "s-stv-1"); other.Name == cm.Name {
		t.Errorf("two manifests define ConfigMap %s", cm.Name)
	}
	// The plain startup manifest stays a single Pod.
	if data, _ := manifest("x", kindStartup, 1); bytes.Contains(data, []byte("---")) || bytes.Contains(data, []byte("volumes")) {
		t.Errorf("plain startup manifest:\n%s", data)
	}
}

// TestFloorPodWithVolumesMirrorsManifest: the floor's startup pod with
// volumes has the manifest's init and app, mounts the same volumes at the
// same paths with the same read-only flags, and holds the files the
// agent's volumes show (the downward API's for the floor pod's name).
func TestFloorPodWithVolumesMirrorsManifest(t *testing.T) {
	p := floorPod("f-stv-0", kindStartupVolumes, 1)
	if p.Init == nil || p.App.Image != busyboxImage || p.Namespace != floorNamespace {
		t.Fatalf("floor pod = %+v", p)
	}
	if want := []string{"scratch", "config", "podinfo"}; !slices.Equal(p.App.Mounts, want) || len(p.Init.Mounts) != 0 {
		t.Errorf("app mounts %v (init %v), want %v (init none)", p.App.Mounts, p.Init.Mounts, want)
	}
	want := []criops.Volume{
		{Name: "scratch", ContainerPath: "/scratch"},
		{Name: "config", ContainerPath: "/etc/config", ReadOnly: true, Files: map[string]string{"app.conf": appConf}},
		{Name: "podinfo", ContainerPath: "/etc/podinfo", ReadOnly: true,
			Files: map[string]string{"labels": "app=\"bench-startup\"\ntier=\"bench\"", "name": "f-stv-0"}},
	}
	if len(p.Volumes) != len(want) {
		t.Fatalf("floor volumes = %+v, want %+v", p.Volumes, want)
	}
	for i, v := range p.Volumes {
		w := want[i]
		if v.Name != w.Name || v.ContainerPath != w.ContainerPath || v.ReadOnly != w.ReadOnly || !maps.Equal(v.Files, w.Files) {
			t.Errorf("floor volume %d = %+v, want %+v", i, v, w)
		}
	}
	if plain := floorPod("f", kindStartup, 1); len(plain.Volumes) != 0 || len(plain.App.Mounts) != 0 {
		t.Errorf("plain startup floor pod has volumes: %+v", plain)
	}
}
