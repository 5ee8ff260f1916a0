package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/util/dryrun"
)

// Delete enforces the namespace life cycle, as upstream's REST.Delete
// (pkg/registry/core/namespace/storage/storage.go): the first DELETE sets
// deletionTimestamp and phase Terminating and keeps the namespace (the
// namespace controller empties it, then removes "kubernetes" through
// /finalize); a DELETE while spec.finalizers remain returns the namespace
// unchanged; once spec.finalizers is empty the Store deletes it (or waits
// for metadata.finalizers). DeleteOptions' propagation adds or removes the
// orphan and foregroundDeletion finalizers at the first DELETE.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	if err := checkPreconditions(ns, options); err != nil {
		return nil, false, err
	}
	if ns.DeletionTimestamp.IsZero() {
		out, err := r.markTerminating(ctx, name, deleteValidation, options)
		return out, false, err
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return r.store.Delete(ctx, name, deleteValidation, options)
}

// checkPreconditions fills the UID precondition and checks the given ones
// against ns, with upstream's conflict messages.
func checkPreconditions(ns *corev1.Namespace, options *metav1.DeleteOptions) error {
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	p := options.Preconditions
	switch {
	case p.UID == nil:
		p.UID = &ns.UID
	case *p.UID != ns.UID:
		return apierrors.NewConflict(Resource, ns.Name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, ns.UID)) //nolint:staticcheck // ST1005: upstream's message
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != ns.ResourceVersion {
		return apierrors.NewConflict(Resource, ns.Name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, ns.ResourceVersion)) //nolint:staticcheck // ST1005: upstream's message
	}
	return nil
}

// markTerminating sets deletionTimestamp, phase Terminating and the
// propagation finalizers in one storage update.
func (r *REST) markTerminating(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, error) {
	key, err := r.store.KeyFunc(ctx, name)
	if err != nil {
		return nil, err
	}
	preconditions := storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
	out := r.store.NewFunc()
	err = r.store.Storage.GuaranteedUpdate(ctx, key, out, false, &preconditions,
		storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
			ns, ok := existing.(*corev1.Namespace)
			if !ok {
				return nil, fmt.Errorf("expected a namespace, got %T", existing)
			}
			if err := deleteValidation(ctx, ns); err != nil {
				return nil, err
			}
			if ns.DeletionTimestamp.IsZero() {
				now := metav1.Now()
				ns.DeletionTimestamp = &now
			}
			ns.Status.Phase = corev1.NamespaceTerminating
			ns.Finalizers = propagationFinalizers(ns.Finalizers, options)
			return ns, nil
		}),
		dryrun.IsDryRun(options.DryRun), nil)
	if err != nil {
		err = storageerr.InterpretGetError(err, Resource, name)
		err = storageerr.InterpretUpdateError(err, Resource, name)
		if _, ok := errors.AsType[*apierrors.StatusError](err); !ok {
			err = apierrors.NewInternalError(err)
		}
		return nil, err
	}
	return out, nil
}

// propagationFinalizers returns finalizers with orphan and
// foregroundDeletion present or absent as options ask (upstream's
// shouldHaveOrphanFinalizer and shouldHaveDeleteDependentsFinalizer);
// without a preference, as they were. The other finalizers keep their
// order; these two go last.
func propagationFinalizers(finalizers []string, options *metav1.DeleteOptions) []string {
	orphan := slices.Contains(finalizers, metav1.FinalizerOrphanDependents)
	foreground := slices.Contains(finalizers, metav1.FinalizerDeleteDependents)
	switch {
	case options.OrphanDependents != nil: //nolint:staticcheck // SA1019: still honoured, as upstream
		orphan, foreground = *options.OrphanDependents, !*options.OrphanDependents //nolint:staticcheck // SA1019
	case options.PropagationPolicy != nil:
		orphan = *options.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *options.PropagationPolicy == metav1.DeletePropagationForeground
	}
	out := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool {
		return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
	})
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
