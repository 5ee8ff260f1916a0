// Package namespace is the shim's Namespace registry, as upstream's
// pkg/registry/core/namespace: spec.finalizers defaulted to ["kubernetes"],
// phase Active at create, DELETE that marks the namespace Terminating while
// finalizers remain, and the status and finalize subresources.
package namespace

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiffnode/skiff/shim/scheme"
)

// endpoint tells the strategy which endpoint writes: the main resource,
// namespaces/status or namespaces/finalize.
type endpoint int

const (
	mainEndpoint endpoint = iota
	statusEndpoint
	finalizeEndpoint
)

// strategy is upstream's namespaceStrategy, namespaceStatusStrategy and
// namespaceFinalizeStrategy (pkg/registry/core/namespace/strategy.go) in
// one type: each endpoint writes only its part of the object.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	endpoint endpoint
}

func newStrategy(e endpoint) strategy {
	return strategy{ObjectTyper: scheme.Scheme, NameGenerator: names.SimpleNameGenerator, endpoint: e}
}

func (strategy) NamespaceScoped() bool { return false }

// PrepareForCreate sets phase Active and adds the "kubernetes" finalizer
// (not a default: the namespace controller removes it during deletion).
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

// PrepareForUpdate keeps what the endpoint may not change: the main
// resource keeps spec.finalizers and status, namespaces/status keeps the
// spec, namespaces/finalize keeps the status.
func (s strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	switch s.endpoint {
	case mainEndpoint:
		ns.Spec.Finalizers = oldNs.Spec.Finalizers
		ns.Status = oldNs.Status
	case statusEndpoint:
		ns.Spec = oldNs.Spec
	case finalizeEndpoint:
		ns.Status = oldNs.Status
	}
}

// Validate is upstream's ValidateNamespace.
func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	errs := apivalidation.ValidateObjectMetaAccessor(ns, false, apivalidation.ValidateNamespaceName, field.NewPath("metadata"))
	return append(errs, validateFinalizers(ns.Spec.Finalizers)...)
}

// ValidateUpdate is upstream's per-endpoint update validation.
func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(ns, oldNs, field.NewPath("metadata"))
	switch s.endpoint {
	case mainEndpoint:
		errs = append(errs, s.Validate(ctx, obj)...)
	case statusEndpoint:
		errs = append(errs, validatePhase(ns)...)
	case finalizeEndpoint:
		errs = append(errs, validateFinalizers(ns.Spec.Finalizers)...)
	}
	return errs
}

// validatePhase is upstream's ValidateNamespaceStatusUpdate: Active
// exactly when there is no deletionTimestamp.
func validatePhase(ns *corev1.Namespace) field.ErrorList {
	path := field.NewPath("status", "Phase")
	switch {
	case ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceActive:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
	case !ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceTerminating:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

// validateFinalizers is upstream's validateFinalizerName for each of
// spec.finalizers: a qualified name, and a name without a "/" must be a
// standard one ("kubernetes").
func validateFinalizers(finalizers []corev1.FinalizerName) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "finalizers")
	for i, f := range finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), path.Index(i))...)
		if !strings.Contains(string(f), "/") && f != corev1.FinalizerKubernetes {
			errs = append(errs, field.Invalid(path.Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// Canonicalize sets the kubernetes.io/metadata.name label (I.28). As
// upstream, here and not only in defaulting: with generateName the name is
// known only after defaulting and PrepareForCreate.
func (strategy) Canonicalize(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// GetResetFields tells server-side apply which fields each endpoint resets
// (upstream's resetFieldsByVersion*).
func (s strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	var set *fieldpath.Set
	switch s.endpoint {
	case mainEndpoint:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case statusEndpoint:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	case finalizeEndpoint:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{"v1": set}
}

// GetAttrs returns a namespace's labels and selectable fields
// (scheme.FieldLabels["Namespace"] plus metadata.name).
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, nil, fmt.Errorf("not a namespace: %T", obj)
	}
	return labels.Set(ns.Labels), fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}, nil
}

// predicate is the Store's PredicateFunc.
func predicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
