package garbagecollector

import (
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

// event is one change the graph builder applies: from an informer, or
// virtual (a delete made up by a worker that found an object absent).
type event struct {
	virtual   bool
	eventType eventType
	obj       metav1.Object
	oldObj    metav1.Object // updates only; nil otherwise
	gvk       schema.GroupVersionKind
}

// graphBuilder keeps the dependency graph from the informers' events and
// feeds the attemptToDelete and attemptToOrphan queues, as upstream's
// graph_builder.go. processGraphChanges runs in a single goroutine; it is
// the graph's only writer.
type graphBuilder struct {
	log             *slog.Logger
	graph           *graph
	graphChanges    workqueue.TypedInterface[*event]
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
	absent          *referenceCache
	recorder        record.EventRecorder
}

// enqueueVirtualDeleteEvent tells the graph builder that ref does not exist
// according to the API server. Safe for concurrent use.
func (gb *graphBuilder) enqueueVirtualDeleteEvent(ref objectReference) {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	gb.graphChanges.Add(&event{
		virtual:   true,
		eventType: deleteEvent,
		gvk:       gv.WithKind(ref.Kind),
		obj:       &metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID},
	})
}

// processGraphChanges applies one event; false once the queue is shut down.
func (gb *graphBuilder) processGraphChanges() bool {
	ev, quit := gb.graphChanges.Get()
	if quit {
		return false
	}
	defer gb.graphChanges.Done(ev)
	gb.apply(ev)
	return true
}

func identityFromEvent(ev *event) objectReference {
	return objectReference{
		APIVersion: ev.gvk.GroupVersion().String(),
		Kind:       ev.gvk.Kind,
		Namespace:  ev.obj.GetNamespace(),
		Name:       ev.obj.GetName(),
		UID:        ev.obj.GetUID(),
	}
}

func (gb *graphBuilder) apply(ev *event) {
	existing, found := gb.graph.read(ev.obj.GetUID())
	if found && !ev.virtual && !existing.isObserved() {
		existing = gb.observe(existing, identityFromEvent(ev))
	}
	switch {
	case ev.eventType != deleteEvent && !found:
		gb.insert(ev)
	case ev.eventType != deleteEvent:
		gb.update(existing, ev)
	case found:
		gb.delete(existing, ev)
	}
}

// observe marks a virtual node as seen by an informer, replacing it if its
// dependents guessed its identity wrong; those dependents are re-checked
// (the bad child -> good parent order; addDependentToOwners handles the
// other one).
func (gb *graphBuilder) observe(n *node, observed objectReference) *node {
	if observed != n.identity {
		_, invalid := partitionDependents(n.getDependents(), observed)
		for _, dep := range invalid {
			if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
				gb.reportInvalidNamespaceOwnerRef(dep, observed.UID)
			}
			gb.attemptToDelete.Add(dep)
		}
		gb.log.Debug("replacing virtual item with observed item", "virtual", n.identity, "observed", observed)
		n = n.cloneAs(observed)
		gb.graph.write(n)
	}
	n.markObserved()
	return n
}

func (gb *graphBuilder) insert(ev *event) {
	n := newNode(identityFromEvent(ev), ev.obj.GetOwnerReferences())
	n.beingDeleted = beingDeleted(ev.obj)
	n.deletingDependents = n.beingDeleted && hasFinalizer(ev.obj, metav1.FinalizerDeleteDependents)
	gb.graph.write(n)
	gb.addDependentToOwners(n, n.owners)
	// The informer may fold a creation and a deletion into one event.
	gb.processTransitions(ev.oldObj, ev.obj, n)
}

func (gb *graphBuilder) update(n *node, ev *event) {
	if !ev.virtual && (n.identity.APIVersion != ev.gvk.GroupVersion().String() || n.identity.Kind != ev.gvk.Kind) {
		id := n.identity
		id.APIVersion, id.Kind = ev.gvk.GroupVersion().String(), ev.gvk.Kind
		old := n
		n = n.cloneAs(id)
		gb.graph.write(n)
		for _, o := range n.getOwners() {
			if owner, ok := gb.graph.read(o.UID); ok {
				owner.replaceDependent(old, n)
			}
		}
	}
	owners := ev.obj.GetOwnerReferences()
	added, removed, changed := referencesDiffs(n.getOwners(), owners)
	if len(added) != 0 || len(removed) != 0 || len(changed) != 0 {
		// Owners waiting for this dependent may be unblocked now.
		gb.addUnblockedOwnersToDeleteQueue(removed, changed)
		n.setOwners(owners)
		gb.addDependentToOwners(n, added)
		gb.removeDependentFromOwners(n, removed)
	}
	if beingDeleted(ev.obj) {
		n.markBeingDeleted()
	}
	gb.processTransitions(ev.oldObj, ev.obj, n)
}

// processTransitions queues an owner whose deletion starts with the orphan
// or the foregroundDeletion finalizer.
func (gb *graphBuilder) processTransitions(oldObj, obj metav1.Object, n *node) {
	if deletionStartsWithFinalizer(oldObj, obj, metav1.FinalizerOrphanDependents) {
		gb.attemptToOrphan.Add(n)
		return
	}
	if deletionStartsWithFinalizer(oldObj, obj, metav1.FinalizerDeleteDependents) {
		// A node first added as virtual lacks the flag: always set it here.
		n.markDeletingDependents()
		for _, dep := range n.getDependents() {
			gb.attemptToDelete.Add(dep)
		}
		gb.attemptToDelete.Add(n)
	}
}

// addDependentToOwners adds n to its owners' dependents, creating virtual
// owner nodes (queued so that a worker verifies them against the API
// server). A dependent whose reference disagrees with an observed owner's
// namespace or coordinates is queued for a check.
func (gb *graphBuilder) addDependentToOwners(n *node, owners []metav1.OwnerReference) {
	suspect := false
	for _, o := range owners {
		owner, ok := gb.graph.read(o.UID)
		if !ok {
			owner = newNode(ownerIdentity(o, n.identity.Namespace), nil)
			owner.virtual = true
			gb.graph.write(owner)
		}
		owner.addDependent(n)
		switch {
		case !ok:
			gb.attemptToDelete.Add(owner)
		case suspect:
		case owner.identity.Namespace != "" && owner.identity.Namespace != n.identity.Namespace:
			if owner.isObserved() {
				// An observed namespaced owner in another namespace: wrong for sure.
				gb.reportInvalidNamespaceOwnerRef(n, o.UID)
			}
			suspect = true
		case !owner.identity.matches(o):
			suspect = true
		case owner.identity.Namespace == "" && n.identity.Namespace != "" && !owner.isObserved():
			// A virtual cluster-scoped owner may be a missing namespaced
			// object referenced by a cluster-scoped child (upstream #98040).
			suspect = true
		}
	}
	if suspect {
		gb.attemptToDelete.Add(n)
	}
}

// reportInvalidNamespaceOwnerRef records a Warning event
// OwnerRefInvalidNamespace on dependent n.
func (gb *graphBuilder) reportInvalidNamespaceOwnerRef(n *node, ownerUID types.UID) {
	i := slices.IndexFunc(n.getOwners(), func(o metav1.OwnerReference) bool { return o.UID == ownerUID })
	if i < 0 {
		return
	}
	invalid := ownerIdentity(n.getOwners()[i], n.identity.Namespace)
	ref := &corev1.ObjectReference{Kind: n.identity.Kind, APIVersion: n.identity.APIVersion,
		Namespace: n.identity.Namespace, Name: n.identity.Name, UID: n.identity.UID}
	gb.recorder.Eventf(ref, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
		"ownerRef %s does not exist in namespace %q", invalid, n.identity.Namespace)
}

func (gb *graphBuilder) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, o := range owners {
		if owner, ok := gb.graph.read(o.UID); ok {
			owner.deleteDependent(n)
		}
	}
}

// addUnblockedOwnersToDeleteQueue queues the owners a removed reference or
// a blockOwnerDeletion turned false no longer blocks.
func (gb *graphBuilder) addUnblockedOwnersToDeleteQueue(removed []metav1.OwnerReference, changed []ownerRefPair) {
	for _, r := range removed {
		if blocks(r) {
			gb.queueIfKnown(r.UID)
		}
	}
	for _, c := range changed {
		if blocks(c.oldRef) && !blocks(c.newRef) {
			gb.queueIfKnown(c.newRef.UID)
		}
	}
}

func (gb *graphBuilder) queueIfKnown(uid types.UID) {
	if n, ok := gb.graph.read(uid); ok {
		gb.attemptToDelete.Add(n)
	}
}

func blocks(r metav1.OwnerReference) bool {
	return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}
