package garbagecollector

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	// errEnqueuedVirtualDelete: the item is absent and a virtual delete
	// event will take it out of the graph; no retry.
	errEnqueuedVirtualDelete = errors.New("enqueued virtual delete event")
	// errNamespacedOwnerOfClusterScoped: a cluster-scoped object refers to
	// a namespaced owner; never collected, no retry.
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")
)

// queueAction tells a worker whether to forget an item or retry it later.
type queueAction int

const (
	forgetItem queueAction = iota
	requeueItem
)

// processAttemptToDelete handles one item of attemptToDelete; false once
// the queue is shut down. Safe to run in several goroutines.
func (gc *GarbageCollector) processAttemptToDelete(ctx context.Context) bool {
	item, quit := gc.attemptToDelete.Get()
	if quit {
		return false
	}
	defer gc.attemptToDelete.Done(item)
	if gc.attemptToDeleteWorker(ctx, item) == requeueItem {
		gc.attemptToDelete.AddRateLimited(item)
	} else {
		gc.attemptToDelete.Forget(item)
	}
	return true
}

func (gc *GarbageCollector) attemptToDeleteWorker(ctx context.Context, n *node) queueAction {
	current, inGraph := gc.graph.read(n.identity.UID)
	if !n.isObserved() && (!inGraph || current.isObserved()) {
		// A requeued virtual node since removed, or since observed for real.
		return forgetItem
	}
	if inGraph && (current.identity.APIVersion != n.identity.APIVersion || current.identity.Kind != n.identity.Kind) {
		id := n.identity
		id.APIVersion, id.Kind = current.identity.APIVersion, current.identity.Kind
		n = n.cloneAs(id)
	}
	err := gc.attemptToDeleteItem(ctx, n)
	switch {
	case errors.Is(err, errEnqueuedVirtualDelete), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return forgetItem
	case err != nil:
		gc.log.Info("garbage collector: retrying item", "item", n.identity, "err", err)
		return requeueItem
	case !n.isObserved():
		// Until an informer sees it (an object added and removed while a
		// watch was re-established could otherwise stay; upstream #56121).
		return requeueItem
	}
	return forgetItem
}

// attemptToDeleteItem looks up the live object of item and deletes it if
// its UID matches, it is not waiting for its own dependents, and all its
// owners are absent; dangling references beside a solid owner are patched
// away (upstream's garbagecollector.go).
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, item *node) error {
	if item.isBeingDeleted() && !item.isDeletingDependents() {
		return nil // a one-way trip; its dependents are handled once it is gone
	}
	latest, err := gc.getObject(ctx, item.identity)
	if apierrors.IsNotFound(err) || (err == nil && latest.UID != item.identity.UID) {
		gc.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDelete
	}
	if err != nil {
		return err
	}
	if item.isDeletingDependents() {
		return gc.processDeletingDependentsItem(ctx, item)
	}
	if len(latest.OwnerReferences) == 0 {
		return nil
	}
	solid, dangling, waiting, err := gc.classifyReferences(ctx, item, latest.OwnerReferences)
	if err != nil {
		return err
	}
	switch {
	case len(solid) != 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// Waiting references must go too, or their owners would wait forever.
		uids := append(refUIDs(dangling), refUIDs(waiting)...)
		smp, err := deleteOwnerRefSMP(item.identity.UID, uids...)
		if err != nil {
			return err
		}
		return gc.patch(ctx, item.identity, smp, deleteOwnerRefJMP(uids...))
	case len(waiting) != 0 && item.dependentsLength() != 0:
		return gc.deleteWithDependents(ctx, item, latest)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return gc.deleteItem(ctx, item, latest, policy)
	}
}

// deleteWithDependents deletes item in the foreground because an owner
// waits for it and it has dependents itself. If one of those dependents
// also waits for its dependents, item's references are first made
// non-blocking to break a possible cycle (a heuristic, as upstream).
func (gc *GarbageCollector) deleteWithDependents(ctx context.Context, item *node, latest *metav1.PartialObjectMetadata) error {
	for _, dep := range item.getDependents() {
		if !dep.isDeletingDependents() {
			continue
		}
		smp, err := unblockOwnerRefsSMP(item)
		if err != nil {
			return err
		}
		if smp == nil {
			break // unblocked already (a retry after the patch's conflict)
		}
		if err := gc.patch(ctx, item.identity, smp, unblockOwnerRefsJMP); err != nil {
			return err
		}
		break
	}
	return gc.deleteItem(ctx, item, latest, metav1.DeletePropagationForeground)
}

func (gc *GarbageCollector) deleteItem(ctx context.Context, item *node, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	gc.log.Info("garbage collector: deleting", "item", item.identity, "propagationPolicy", policy)
	err := gc.deleteObject(ctx, item.identity, latest.ResourceVersion, latest.OwnerReferences, policy)
	if apierrors.IsNotFound(err) {
		gc.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDelete
	}
	return err
}

// processDeletingDependentsItem removes foregroundDeletion from an owner
// none of whose dependents blocks it any more, or queues the blocking ones.
func (gc *GarbageCollector) processDeletingDependentsItem(ctx context.Context, item *node) error {
	blocking := item.blockingDependents()
	if len(blocking) == 0 {
		return gc.removeFinalizer(ctx, item.identity, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.isDeletingDependents() {
			gc.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// classifyReferences sorts owner references into solid (the owner exists
// and is not waiting for its dependents), dangling (absent) and waiting
// (being deleted with foregroundDeletion). It talks to the API server.
func (gc *GarbageCollector) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference) (
	solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := gc.isDangling(ctx, ref, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case beingDeleted(owner) && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling reports whether ref points to no live object: not found, or
// found with another UID (verified by a live GET, or the absent cache). A
// namespaced owner is looked up in the dependent's namespace only.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node) (
	bool, *metav1.PartialObjectMetadata, error) {
	key := ownerIdentity(ref, "")
	if gc.absent.has(key) {
		return true, nil, nil
	}
	key.Namespace = item.identity.Namespace
	if gc.absent.has(key) {
		return true, nil, nil
	}
	gvr, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if item.identity.Namespace == "" && namespaced {
		gc.log.Info("garbage collector: cluster-scoped item refers to a namespaced owner", "item", item.identity, "owner", ref.Name)
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	owner, err := gc.metadata.Resource(gvr).Namespace(key.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gc.absent.add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, fmt.Errorf("get owner %s: %w", key, err)
	case owner.UID != ref.UID:
		gc.absent.add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	uids := make([]types.UID, 0, len(refs))
	for _, r := range refs {
		uids = append(uids, r.UID)
	}
	return uids
}
