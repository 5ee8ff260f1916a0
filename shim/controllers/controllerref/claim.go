// Package controllerref adopts and releases the objects a controller
// selects, as upstream's pkg/controller/controller_ref_manager.go
// (BaseControllerRefManager.ClaimObject): an object whose controller
// reference names the owner is kept while the selector matches it and
// released when it no longer does; an orphan the selector matches is
// adopted, once the owner, read fresh from the API, is still alive.
package controllerref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Claimer claims objects for one owner.
type Claimer struct {
	// Owner is the controller (its cached copy).
	Owner metav1.Object
	// OwnerKind is the owner's group, version and kind.
	OwnerKind schema.GroupVersionKind
	// Selector selects the owner's objects.
	Selector labels.Selector
	// CanAdopt returns an error if the owner may not adopt now: upstream
	// re-reads it with a quorum read and checks its UID and that it is not
	// being deleted (RecheckDeletionTimestamp). Called at most once.
	CanAdopt func(ctx context.Context) error
	// Patch applies a strategic merge patch to the object of that name
	// in the owner's namespace.
	Patch func(ctx context.Context, name string, patch []byte) error

	once     sync.Once
	adoptErr error
}

// Claim returns the objects of objs the owner controls after adopting and
// releasing as needed; the error joins those of failed patches (objects
// that failed to be adopted are left out, as upstream).
func Claim[T metav1.Object](ctx context.Context, c *Claimer, objs []T) ([]T, error) {
	var claimed []T
	var errs []error
	for _, obj := range objs {
		ok, err := c.claim(ctx, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, obj)
		}
	}
	return claimed, errors.Join(errs...)
}

// claim decides for one object; true if the owner controls it afterwards.
func (c *Claimer) claim(ctx context.Context, obj metav1.Object) (bool, error) {
	matches := c.Selector.Matches(labels.Set(obj.GetLabels()))
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != c.Owner.GetUID() {
			return false, nil // another controller's
		}
		if matches {
			return true, nil
		}
		if c.Owner.GetDeletionTimestamp() != nil {
			return false, nil // the GC deals with it
		}
		return false, c.release(ctx, obj)
	}
	if c.Owner.GetDeletionTimestamp() != nil || !matches || obj.GetDeletionTimestamp() != nil ||
		obj.GetNamespace() != c.Owner.GetNamespace() {
		return false, nil
	}
	if err := c.adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// adopt adds the owner as controller with blockOwnerDeletion, the patch
// guarded by the object's UID (upstream's ownerRefControllerPatch).
func (c *Claimer) adopt(ctx context.Context, obj metav1.Object) error {
	c.once.Do(func() { c.adoptErr = c.CanAdopt(ctx) })
	if c.adoptErr != nil {
		return fmt.Errorf("can't adopt %s %s/%s: %w", c.OwnerKind.Kind, obj.GetNamespace(), obj.GetName(), c.adoptErr)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*NewControllerRef(c.Owner, c.OwnerKind)},
		"uid":             obj.GetUID(),
	}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj.GetName(), patch)
}

// release removes the owner's reference (upstream's
// GenerateDeleteOwnerRefStrategicMergeBytes); an object gone or changed
// meanwhile (404, 422 on the UID guard) is not an error.
func (c *Claimer) release(ctx context.Context, obj metav1.Object) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": c.Owner.GetUID()}},
		"uid":             obj.GetUID(),
	}})
	if err != nil {
		return err
	}
	err = c.Patch(ctx, obj.GetName(), patch)
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// NewControllerRef is the owner reference a controller puts on what it
// creates or adopts: controller and blockOwnerDeletion true.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: owner.GetName(), UID: owner.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}
}

// RecheckOwner returns a CanAdopt function: get reads the owner fresh from
// the API; it must have uid and no deletionTimestamp.
func RecheckOwner(uid types.UID, get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := get(ctx)
		if err != nil {
			return err
		}
		if fresh.GetUID() != uid {
			return fmt.Errorf("original %s is gone: got uid %v, wanted %v", fresh.GetName(), fresh.GetUID(), uid)
		}
		if fresh.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s has just been deleted at %v", fresh.GetName(), fresh.GetDeletionTimestamp())
		}
		return nil
	}
}
