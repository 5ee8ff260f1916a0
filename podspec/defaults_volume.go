package podspec

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// setVolumeDefaults mirrors upstream's SetDefaults_Volume and the volume
// source defaults: a volume with no source is an emptyDir; configMap,
// secret, downwardAPI and projected files default to mode 0644; hostPath's
// type to "" (no check); downward API fieldRefs to apiVersion v1.
func setVolumeDefaults(v *v1.Volume) {
	if img := v.Image; img != nil && img.PullPolicy == "" {
		img.PullPolicy = defaultPullPolicy(img.Reference)
	}
	if allPointersNil(&v.VolumeSource) {
		v.VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
	}
	mode := func(m **int32) {
		if *m == nil {
			d := v1.ConfigMapVolumeSourceDefaultMode
			*m = &d
		}
	}
	src := &v.VolumeSource
	switch {
	case src.HostPath != nil && src.HostPath.Type == nil:
		t := v1.HostPathUnset
		src.HostPath.Type = &t
	case src.ConfigMap != nil:
		mode(&src.ConfigMap.DefaultMode)
	case src.Secret != nil:
		mode(&src.Secret.DefaultMode)
	case src.DownwardAPI != nil:
		mode(&src.DownwardAPI.DefaultMode)
		setFieldRefDefaults(src.DownwardAPI.Items)
	case src.Projected != nil:
		mode(&src.Projected.DefaultMode)
		for _, s := range src.Projected.Sources {
			if s.DownwardAPI != nil {
				setFieldRefDefaults(s.DownwardAPI.Items)
			}
		}
	}
}

func setFieldRefDefaults(items []v1.DownwardAPIVolumeFile) {
	for _, it := range items {
		if it.FieldRef != nil && it.FieldRef.APIVersion == "" {
			it.FieldRef.APIVersion = "v1"
		}
	}
}

// allPointersNil reports whether every pointer field of the struct *s is
// nil (upstream's pointer.AllPtrFieldsNil).
func allPointersNil(s any) bool {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return false
		}
	}
	return true
}
