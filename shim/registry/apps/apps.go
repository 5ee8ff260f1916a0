// Package apps describes the shim's apps/v1 kinds: Deployments and
// ReplicaSets, each with status and scale subresources, validated as
// upstream's pkg/apis/apps/validation (the pod template by skiff's
// podspec.ValidateAPIPod, as pods are).
package apps

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/printers"
	"github.com/skiffnode/skiff/shim/registry/generic"
)

// Deployments: apps/v1, status and scale subresources.
var Deployments = &generic.Kind{
	Table: printers.Deployments(),
	Group: appsv1.GroupName, Version: "v1", Resource: "deployments", Singular: "deployment", Namespaced: true,
	New:        func() runtime.Object { return &appsv1.Deployment{} },
	NewList:    func() runtime.Object { return &appsv1.DeploymentList{} },
	ShortNames: []string{"deploy"},
	Categories: []string{"all"},
	Status:     true,
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateDeploymentSpec(&obj.(*appsv1.Deployment).Spec)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return immutableSelector(obj.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector)
	},
	PrepareForCreate: func(obj runtime.Object) { obj.(*appsv1.Deployment).Generation = 1 },
	PrepareForUpdate: func(obj, old runtime.Object) {
		// Upstream's deploymentStrategy.PrepareForUpdate: annotations bump
		// it too, since they are copied to the ReplicaSets.
		d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
		if !equality.Semantic.DeepEqual(d.Spec, o.Spec) || !equality.Semantic.DeepEqual(d.Annotations, o.Annotations) {
			d.Generation = o.Generation + 1
		}
	},
	Scale: &generic.ScaleFuncs{
		Replicas:       func(obj runtime.Object) int32 { return ptr.Deref(obj.(*appsv1.Deployment).Spec.Replicas, 1) },
		SetReplicas:    func(obj runtime.Object, n int32) { obj.(*appsv1.Deployment).Spec.Replicas = &n },
		StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.Deployment).Status.Replicas },
		Selector:       func(obj runtime.Object) *metav1.LabelSelector { return obj.(*appsv1.Deployment).Spec.Selector },
	},
}

// ReplicaSets: apps/v1, status and scale subresources, the status.replicas
// field selector (upstream's ReplicaSetToSelectableFields).
var ReplicaSets = &generic.Kind{
	Table: printers.ReplicaSets(),
	Group: appsv1.GroupName, Version: "v1", Resource: "replicasets", Singular: "replicaset", Namespaced: true,
	New:        func() runtime.Object { return &appsv1.ReplicaSet{} },
	NewList:    func() runtime.Object { return &appsv1.ReplicaSetList{} },
	ShortNames: []string{"rs"},
	Categories: []string{"all"},
	Status:     true,
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateReplicaSetSpec(&obj.(*appsv1.ReplicaSet).Spec)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return immutableSelector(obj.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector)
	},
	PrepareForCreate: func(obj runtime.Object) { obj.(*appsv1.ReplicaSet).Generation = 1 },
	PrepareForUpdate: func(obj, old runtime.Object) {
		rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
		if !equality.Semantic.DeepEqual(rs.Spec, o.Spec) {
			rs.Generation = o.Generation + 1
		}
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"status.replicas": strconv.FormatInt(int64(obj.(*appsv1.ReplicaSet).Status.Replicas), 10)}
	},
	Scale: &generic.ScaleFuncs{
		Replicas:       func(obj runtime.Object) int32 { return ptr.Deref(obj.(*appsv1.ReplicaSet).Spec.Replicas, 1) },
		SetReplicas:    func(obj runtime.Object, n int32) { obj.(*appsv1.ReplicaSet).Spec.Replicas = &n },
		StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.ReplicaSet).Status.Replicas },
		Selector:       func(obj runtime.Object) *metav1.LabelSelector { return obj.(*appsv1.ReplicaSet).Spec.Selector },
	},
}

// All is the apps/v1 kinds.
var All = []*generic.Kind{Deployments, ReplicaSets}
