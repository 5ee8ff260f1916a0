// Package core describes the shim's kinds other than pods and namespaces
// (shim/registry/namespace): nodes, configmaps, secrets, serviceaccounts,
// events (core/v1 and events.k8s.io/v1, one stored object: events.go) and
// leases (coordination.k8s.io/v1).
package core

import (
	"bytes"
	"maps"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/podspec"
	"github.com/skiffnode/skiff/shim/printers"
	"github.com/skiffnode/skiff/shim/registry/generic"
)

// Nodes: cluster-scoped, status subresource, spec.unschedulable selector.
var Nodes = &generic.Kind{
	Table:   printers.Nodes(),
	Version: "v1", Resource: "nodes", Singular: "node",
	New:        func() runtime.Object { return &corev1.Node{} },
	NewList:    func() runtime.Object { return &corev1.NodeList{} },
	ShortNames: []string{"no"},
	Status:     true,
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
	},
}

// ConfigMaps, validated by skiff's podspec.ValidateConfigMap.
var ConfigMaps = &generic.Kind{
	Table:   printers.ConfigMaps(),
	Version: "v1", Resource: "configmaps", Singular: "configmap", Namespaced: true,
	New:        func() runtime.Object { return &corev1.ConfigMap{} },
	NewList:    func() runtime.Object { return &corev1.ConfigMapList{} },
	ShortNames: []string{"cm"},
	Validate: func(obj runtime.Object) field.ErrorList {
		return withoutMetadata(podspec.ValidateConfigMap(obj.(*corev1.ConfigMap)))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return immutableData(obj.(*corev1.ConfigMap).Immutable, old.(*corev1.ConfigMap).Immutable,
			func() bool {
				n, o := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
				return maps.Equal(n.Data, o.Data) && maps.EqualFunc(n.BinaryData, o.BinaryData, bytes.Equal)
			})
	},
}

// Secrets, defaulted (type Opaque) and validated by skiff's podspec.
var Secrets = &generic.Kind{
	Table:   printers.Secrets(),
	Version: "v1", Resource: "secrets", Singular: "secret", Namespaced: true,
	New:     func() runtime.Object { return &corev1.Secret{} },
	NewList: func() runtime.Object { return &corev1.SecretList{} },
	Validate: func(obj runtime.Object) field.ErrorList {
		return withoutMetadata(podspec.ValidateSecret(obj.(*corev1.Secret)))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		n, o := obj.(*corev1.Secret), old.(*corev1.Secret)
		errs := immutableData(n.Immutable, o.Immutable, func() bool { return maps.EqualFunc(n.Data, o.Data, bytes.Equal) })
		if n.Type != o.Type {
			errs = append(errs, field.Invalid(field.NewPath("type"), n.Type, "field is immutable"))
		}
		return errs
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
	},
}

// ServiceAccounts; the "default" one in every namespace is
// shim/controllers/serviceaccount's. TODO(issue 17): /token.
var ServiceAccounts = &generic.Kind{
	Table:   printers.ServiceAccounts(),
	Version: "v1", Resource: "serviceaccounts", Singular: "serviceaccount", Namespaced: true,
	New:        func() runtime.Object { return &corev1.ServiceAccount{} },
	NewList:    func() runtime.Object { return &corev1.ServiceAccountList{} },
	ShortNames: []string{"sa"},
}

// Leases (coordination.k8s.io/v1): the kubelet's node heartbeat.
var Leases = &generic.Kind{
	Table: printers.Leases(),
	Group: coordinationv1.GroupName, Version: "v1", Resource: "leases", Singular: "lease", Namespaced: true,
	New:     func() runtime.Object { return &coordinationv1.Lease{} },
	NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
}

// All is every kind the shim serves, in discovery order per group.
var All = []*generic.Kind{Nodes, ConfigMaps, Secrets, ServiceAccounts, Events, Leases, EventsV1}

// withoutMetadata drops metadata errors: the generic strategy reports those.
func withoutMetadata(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if len(e.Field) < 8 || e.Field[:8] != "metadata" {
			out = append(out, e)
		}
	}
	return out
}

// immutableData refuses data changes of an immutable ConfigMap or Secret
// and unsetting immutable.
func immutableData(now, was *bool, sameData func() bool) field.ErrorList {
	if was == nil || !*was {
		return nil
	}
	var errs field.ErrorList
	if now == nil || !*now {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	if !sameData() {
		errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
	}
	return errs
}
