package upstream

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1internal "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// addTemplateDefaults registers upstream's defaulting of PodTemplates
// (their pod spec's, as a pod's) and LimitRanges in s (the shim's
// scheme).
func addTemplateDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&corev1.PodTemplate{}, func(obj any) {
		corev1internal.SetObjectDefaults_PodTemplate(obj.(*corev1.PodTemplate))
	})
	s.AddTypeDefaultingFunc(&corev1.PodTemplateList{}, func(obj any) {
		corev1internal.SetObjectDefaults_PodTemplateList(obj.(*corev1.PodTemplateList))
	})
	s.AddTypeDefaultingFunc(&corev1.LimitRange{}, func(obj any) {
		corev1internal.SetObjectDefaults_LimitRange(obj.(*corev1.LimitRange))
	})
	s.AddTypeDefaultingFunc(&corev1.LimitRangeList{}, func(obj any) {
		corev1internal.SetObjectDefaults_LimitRangeList(obj.(*corev1.LimitRangeList))
	})
}

// podTemplates is core/v1 PodTemplates with upstream's strategy.
func podTemplates(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "podtemplates", Singular: "podtemplate", Namespaced: true,
		New:     func() runtime.Object { return &corev1.PodTemplate{} },
		NewList: func() runtime.Object { return &corev1.PodTemplateList{} },
	}, podtemplate.Strategy, nil)
}

// limitRanges is core/v1 LimitRanges with upstream's strategy: stored and
// served (no LimitRanger admission applies them to pods).
func limitRanges(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "limitranges", Singular: "limitrange", Namespaced: true,
		New:        func() runtime.Object { return &corev1.LimitRange{} },
		NewList:    func() runtime.Object { return &corev1.LimitRangeList{} },
		ShortNames: []string{"limits"},
	}, limitrange.Strategy, nil)
}
