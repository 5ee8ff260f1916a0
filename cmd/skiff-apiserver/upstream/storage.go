package upstream

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1internal "k8s.io/kubernetes/pkg/apis/core/v1"
	pvcregistry "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// addClaimDefaults registers upstream's defaulting of
// PersistentVolumeClaims in s (the shim's scheme).
func addClaimDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&corev1.PersistentVolumeClaim{}, func(obj any) {
		corev1internal.SetObjectDefaults_PersistentVolumeClaim(obj.(*corev1.PersistentVolumeClaim))
	})
	s.AddTypeDefaultingFunc(&corev1.PersistentVolumeClaimList{}, func(obj any) {
		corev1internal.SetObjectDefaults_PersistentVolumeClaimList(obj.(*corev1.PersistentVolumeClaimList))
	})
}

// persistentVolumeClaims is core/v1 PersistentVolumeClaims with upstream's
// strategy: stored and served (a StatefulSet's volumeClaimTemplates make
// them), not yet bound: no volumes are provisioned, and the node refuses
// pods that mount one.
func persistentVolumeClaims(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Namespaced: true,
		New:        func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:    func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		ShortNames: []string{"pvc"},
		Status:     true,
	}, pvcregistry.Strategy, pvcregistry.StatusStrategy)
}
