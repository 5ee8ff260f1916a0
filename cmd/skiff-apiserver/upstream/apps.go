package upstream

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsv1internal "k8s.io/kubernetes/pkg/apis/apps/v1"
	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"

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

// addDaemonSetDefaults registers upstream's defaulting of DaemonSets in s
// (the shim's scheme), and of no other apps/v1 kind: the shim defaults
// its own Deployments and ReplicaSets.
func addDaemonSetDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&appsv1.DaemonSet{}, func(obj any) { appsv1internal.SetObjectDefaults_DaemonSet(obj.(*appsv1.DaemonSet)) })
	s.AddTypeDefaultingFunc(&appsv1.DaemonSetList{}, func(obj any) { appsv1internal.SetObjectDefaults_DaemonSetList(obj.(*appsv1.DaemonSetList)) })
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
