package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/bench/internal/criops"
)

// The startup pod with volumes (issue 14): its app mounts an emptyDir, a
// configMap and a downwardAPI volume. The floor's pod is derived from the
// same v1 objects (floorVolumes), so the two cannot drift apart.

// appConf is the content of the ConfigMap's one key, app.conf.
const appConf = "greeting = hello\ntarget = world\nlevel = info\n"

// startupLabels are the pod's labels, shown by its downwardAPI volume.
func startupLabels() map[string]string {
	return map[string]string{"app": "bench-startup", "tier": "bench"}
}

// configMapName is the ConfigMap of manifest name: named after it, so that
// no two manifest files define the same object (skiff rejects duplicates).
func configMapName(name string) string { return name + "-config" }

// configMapOf is the ConfigMap document in the manifest file of name.
func configMapOf(name string) *v1.ConfigMap {
	return &v1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: configMapName(name), Namespace: agentNamespace},
		Data:       map[string]string{"app.conf": appConf},
	}
}

// startupVolumes are the volumes of the pod of manifest name.
func startupVolumes(name string) []v1.Volume {
	field := func(path string) *v1.ObjectFieldSelector {
		return &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}
	}
	return []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: configMapName(name)}}}},
		{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: field("metadata.labels")},
			{Path: "name", FieldRef: field("metadata.name")},
		}}}},
	}
}

// startupVolumeMounts are the app's mounts; configMap and downwardAPI
// volumes are read-only (the kubelet mounts them so whatever the pod says).
func startupVolumeMounts() []v1.VolumeMount {
	return []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "config", MountPath: "/etc/config", ReadOnly: true},
		{Name: "podinfo", MountPath: "/etc/podinfo", ReadOnly: true},
	}
}

// floorVolumes turns pod's volumes and its app's mounts into the floor's:
// an emptyDir is an empty directory, a configMap volume cm's data, a
// downwardAPI volume its items' values (labels as the kubelet formats
// them). It panics on a volume type it does not know:
// the bench's own pods only.
func floorVolumes(pod *v1.Pod, cm *v1.ConfigMap) ([]criops.Volume, []string) {
	app := pod.Spec.Containers[0]
	var vols []criops.Volume
	var mounts []string
	for _, m := range app.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			panic(fmt.Sprintf("bench pod %s mounts unknown volume %s", pod.Name, m.Name))
		}
		src := pod.Spec.Volumes[i].VolumeSource
		v := criops.Volume{Name: m.Name, ContainerPath: m.MountPath, ReadOnly: m.ReadOnly}
		switch {
		case src.EmptyDir != nil:
		case src.ConfigMap != nil:
			v.Files = maps.Clone(cm.Data)
		case src.DownwardAPI != nil:
			v.Files = map[string]string{}
			for _, it := range src.DownwardAPI.Items {
				v.Files[it.Path] = downwardValue(pod, it.FieldRef.FieldPath)
			}
		default:
			panic(fmt.Sprintf("bench pod %s: volume %s of an unknown type", pod.Name, m.Name))
		}
		vols, mounts = append(vols, v), append(mounts, m.Name)
	}
	return vols, mounts
}

// downwardValue is the file content of fieldPath of pod in the kubelet's
// format (labels: sorted key="value" lines, values quoted).
func downwardValue(pod *v1.Pod, fieldPath string) string {
	switch fieldPath {
	case "metadata.name":
		return pod.Name
	case "metadata.labels":
		lines := make([]string, 0, len(pod.Labels))
		for _, k := range slices.Sorted(maps.Keys(pod.Labels)) {
			lines = append(lines, fmt.Sprintf("%s=%q", k, pod.Labels[k]))
		}
		return strings.Join(lines, "\n")
	}
	panic(fmt.Sprintf("bench pod %s: downward API field %s", pod.Name, fieldPath))
}
