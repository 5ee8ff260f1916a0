package upstream

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsv1internal "k8s.io/kubernetes/pkg/apis/apps/v1"
	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"

	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// addAppsToScheme registers apps' internal types and the v1 conversions
// and defaults in s.
func addAppsToScheme(s *runtime.Scheme) error {
	if err := apps.AddToScheme(s); err != nil {
		return err
	}
	return appsv1internal.AddToScheme(s)
}

// addDaemonSetDefaults registers upstream's defaulting of DaemonSets and
// StatefulSets in s (the shim's scheme), and of no other apps/v1 kind: the
// shim defaults its own Deployments and ReplicaSets.
func addDaemonSetDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&appsv1.DaemonSet{}, func(obj any) { appsv1internal.SetObjectDefaults_DaemonSet(obj.(*appsv1.DaemonSet)) })
	s.AddTypeDefaultingFunc(&appsv1.DaemonSetList{}, func(obj any) { appsv1internal.SetObjectDefaults_DaemonSetList(obj.(*appsv1.DaemonSetList)) })
	s.AddTypeDefaultingFunc(&appsv1.StatefulSet{}, func(obj any) { appsv1internal.SetObjectDefaults_StatefulSet(obj.(*appsv1.StatefulSet)) })
	s.AddTypeDefaultingFunc(&appsv1.StatefulSetList{}, func(obj any) {
		appsv1internal.SetObjectDefaults_StatefulSetList(obj.(*appsv1.StatefulSetList))
	})
}

// statefulSets is apps/v1 StatefulSets with upstream's statefulset
// strategy and the scale subresource.
func statefulSets(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: appsv1.GroupName, Version: "v1", Resource: "statefulsets", Singular: "statefulset", Namespaced: true,
		New:        func() runtime.Object { return &appsv1.StatefulSet{} },
		NewList:    func() runtime.Object { return &appsv1.StatefulSetList{} },
		ShortNames: []string{"sts"},
		Categories: []string{"all"},
		Status:     true,
		Scale: &generic.ScaleFuncs{
			Replicas:       func(obj runtime.Object) int32 { return ptr.Deref(obj.(*appsv1.StatefulSet).Spec.Replicas, 1) },
			SetReplicas:    func(obj runtime.Object, n int32) { obj.(*appsv1.StatefulSet).Spec.Replicas = &n },
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.StatefulSet).Status.Replicas },
			Selector:       func(obj runtime.Object) *metav1.LabelSelector { return obj.(*appsv1.StatefulSet).Spec.Selector },
		},
	}, statefulset.Strategy, statefulset.StatusStrategy)
}

// daemonSets is apps/v1 DaemonSets with upstream's daemonset strategy.
func daemonSets(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: appsv1.GroupName, Version: "v1", Resource: "daemonsets", Singular: "daemonset", Namespaced: true,
		New:        func() runtime.Object { return &appsv1.DaemonSet{} },
		NewList:    func() runtime.Object { return &appsv1.DaemonSetList{} },
		ShortNames: []string{"ds"},
		Categories: []string{"all"},
		Status:     true,
	}, daemonset.Strategy, daemonset.StatusStrategy)
}

// controllerRevisions is apps/v1 ControllerRevisions (the DaemonSet and
// StatefulSet controllers' template history) with upstream's strategy.
func controllerRevisions(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: appsv1.GroupName, Version: "v1", Resource: "controllerrevisions", Singular: "controllerrevision", Namespaced: true,
		New:     func() runtime.Object { return &appsv1.ControllerRevision{} },
		NewList: func() runtime.Object { return &appsv1.ControllerRevisionList{} },
	}, controllerrevision.Strategy, nil)
}
