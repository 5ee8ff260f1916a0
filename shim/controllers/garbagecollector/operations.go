package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// errRESTMapping: the kind of a reference is not (yet) served; retried,
// since discovery may learn it later.
var errRESTMapping = errors.New("no REST mapping")

// apiResource maps apiVersion and kind to a resource and its scope.
func (gc *GarbageCollector) apiResource(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	m, err := gc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%w for %s %s: %w", errRESTMapping, apiVersion, kind, err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// client returns the metadata client of item's resource and namespace.
func (gc *GarbageCollector) client(item objectReference) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := gc.apiResource(item.APIVersion, item.Kind)
	if err != nil {
		return nil, err
	}
	ns := item.Namespace
	if !namespaced {
		ns = ""
	}
	return gc.metadata.Resource(gvr).Namespace(ns), nil
}

func (gc *GarbageCollector) getObject(ctx context.Context, item objectReference) (*metav1.PartialObjectMetadata, error) {
	c, err := gc.client(item)
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, item.Name, metav1.GetOptions{})
}

func (gc *GarbageCollector) patchObject(ctx context.Context, item objectReference, patch []byte, pt types.PatchType) (*metav1.PartialObjectMetadata, error) {
	c, err := gc.client(item)
	if err != nil {
		return nil, err
	}
	return c.Patch(ctx, item.Name, pt, patch, metav1.PatchOptions{})
}

// deleteObject deletes item with the UID and resourceVersion the decision
// was taken on as preconditions. On a conflict whose owner references did
// not change, it retries with the UID only (upstream's operations.go).
func (gc *GarbageCollector) deleteObject(ctx context.Context, item objectReference, resourceVersion string,
	owners []metav1.OwnerReference, policy metav1.DeletionPropagation) error {
	c, err := gc.client(item)
	if err != nil {
		return err
	}
	uid := item.UID
	pre := metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	opts := metav1.DeleteOptions{Preconditions: &pre, PropagationPolicy: &policy}
	err = c.Delete(ctx, item.Name, opts)
	if !apierrors.IsConflict(err) || resourceVersion == "" {
		return err
	}
	live, liveErr := c.Get(ctx, item.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(liveErr) {
		return liveErr
	}
	if liveErr == nil && live.UID == item.UID && live.ResourceVersion != resourceVersion &&
		reflect.DeepEqual(live.OwnerReferences, owners) {
		pre.ResourceVersion = nil
		return c.Delete(ctx, item.Name, opts)
	}
	return err
}

// patch applies a strategic merge patch, or where the resource has none
// (custom resources), the JSON merge patch jmp builds from the live object.
func (gc *GarbageCollector) patch(ctx context.Context, item objectReference, smp []byte,
	jmp func(*metav1.PartialObjectMetadata) ([]byte, error)) error {
	_, err := gc.patchObject(ctx, item, smp, types.StrategicMergePatchType)
	if !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	live, err := gc.getObject(ctx, item)
	if err != nil {
		return err
	}
	p, err := jmp(live)
	if err != nil {
		return err
	}
	_, err = gc.patchObject(ctx, item, p, types.MergePatchType)
	return err
}

// removeFinalizer removes finalizer from owner with a JSON merge patch of
// the finalizers at the resourceVersion read, retrying conflicts. It is
// idempotent: an owner gone or without the finalizer is success.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, owner objectReference, finalizer string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		live, err := gc.getObject(ctx, owner)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get owner %s: %w", owner, err)
		}
		if !slices.Contains(live.Finalizers, finalizer) {
			return nil
		}
		var kept []string // null when none is left, as upstream
		for _, f := range live.Finalizers {
			if f != finalizer {
				kept = append(kept, f)
			}
		}
		p, err := json.Marshal(metaPatch{Metadata: finalizersPatch{ResourceVersion: live.ResourceVersion, Finalizers: kept}})
		if err != nil {
			return err
		}
		_, err = gc.patchObject(ctx, owner, p, types.MergePatchType)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove finalizer %s from %s: %w", finalizer, owner, err)
	}
	return nil
}

type metaPatch struct {
	Metadata any `json:"metadata"`
}

type finalizersPatch struct {
	ResourceVersion string   `json:"resourceVersion"`
	Finalizers      []string `json:"finalizers"`
}

type ownersPatch struct {
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
}

// smpOwnersPatch is a strategic merge patch of ownerReferences; never
// with a null list, which would remove them all.
type smpOwnersPatch struct {
	UID             types.UID `json:"uid"`
	OwnerReferences []any     `json:"ownerReferences,omitempty"`
}

// deleteOwnerRefSMP removes the references to ownerUIDs; the dependent's
// UID in the patch makes it fail on another object of the same name
// (metadata.uid is immutable), as upstream's controller_utils.go.
func deleteOwnerRefSMP(dependent types.UID, ownerUIDs ...types.UID) ([]byte, error) {
	refs := make([]any, 0, len(ownerUIDs))
	for _, u := range ownerUIDs {
		refs = append(refs, map[string]string{"$patch": "delete", "uid": string(u)})
	}
	return json.Marshal(metaPatch{Metadata: smpOwnersPatch{UID: dependent, OwnerReferences: refs}})
}

// deleteOwnerRefJMP is deleteOwnerRefSMP's JSON merge patch twin, built
// from the live object and guarded by its resourceVersion.
func deleteOwnerRefJMP(ownerUIDs ...types.UID) func(*metav1.PartialObjectMetadata) ([]byte, error) {
	return func(live *metav1.PartialObjectMetadata) ([]byte, error) {
		kept := slices.DeleteFunc(slices.Clone(live.OwnerReferences), func(r metav1.OwnerReference) bool {
			return slices.Contains(ownerUIDs, r.UID)
		})
		return json.Marshal(metaPatch{Metadata: ownersPatch{ResourceVersion: live.ResourceVersion, OwnerReferences: kept}})
	}
}

// unblockOwnerRefsSMP sets blockOwnerDeletion false on n's blocking
// references (upstream's patch.go); nil when none blocks.
func unblockOwnerRefsSMP(n *node) ([]byte, error) {
	var refs []any
	for _, o := range n.getOwners() {
		if blocks(o) {
			o.BlockOwnerDeletion = ptr.To(false)
			refs = append(refs, o)
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	return json.Marshal(metaPatch{Metadata: smpOwnersPatch{UID: n.identity.UID, OwnerReferences: refs}})
}

// unblockOwnerRefsJMP is unblockOwnerRefsSMP's JSON merge patch twin.
func unblockOwnerRefsJMP(live *metav1.PartialObjectMetadata) ([]byte, error) {
	refs := slices.Clone(live.OwnerReferences)
	for i := range refs {
		refs[i].BlockOwnerDeletion = ptr.To(false)
	}
	return json.Marshal(metaPatch{Metadata: ownersPatch{ResourceVersion: live.ResourceVersion, OwnerReferences: refs}})
}
