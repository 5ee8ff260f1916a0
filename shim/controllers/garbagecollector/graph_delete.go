package garbagecollector

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// delete applies a delete event to node n (upstream's processGraphChanges,
// delete case). A virtual delete (a worker found the object absent) must
// not remove a node whose other dependents know it by other coordinates:
// only the dependents that match the verified-absent identity are queued.
func (gb *graphBuilder) delete(n *node, ev *event) {
	remove := true
	if ev.virtual {
		deleted := identityFromEvent(ev)
		if !n.isObserved() {
			matching, nonmatching := partitionDependents(n.getDependents(), deleted)
			if len(nonmatching) > 0 {
				remove = false
				gb.markAbsent(deleted, matching)
				if n.identity == deleted {
					// Try the next identity the other dependents use.
					if alt := alternateOwnerIdentity(nonmatching, deleted); alt != nil {
						replacement := n.cloneAs(*alt)
						gb.graph.write(replacement)
						gb.attemptToDelete.AddRateLimited(replacement)
					}
				}
			}
		} else if n.identity != deleted {
			// The observed node is not what the virtual event verified absent.
			remove = false
			matching, _ := partitionDependents(n.getDependents(), deleted)
			gb.markAbsent(deleted, matching)
		}
	}
	if !remove {
		return
	}
	gb.graph.remove(n.identity.UID)
	gb.removeDependentFromOwners(n, n.getOwners())
	deps := n.getDependents()
	if len(deps) > 0 {
		gb.absent.add(identityFromEvent(ev))
	}
	for _, dep := range deps {
		gb.attemptToDelete.Add(dep)
	}
	for _, o := range n.getOwners() {
		// An owner in foreground deletion may be waiting for n only.
		if owner, ok := gb.graph.read(o.UID); ok && owner.isDeletingDependents() {
			gb.attemptToDelete.Add(owner)
		}
	}
}

// markAbsent records id as absent and queues the dependents that refer to it.
func (gb *graphBuilder) markAbsent(id objectReference, matching []*node) {
	if len(matching) == 0 {
		return
	}
	gb.absent.add(id)
	for _, dep := range matching {
		gb.attemptToDelete.Add(dep)
	}
}

// partitionDependents splits dependents into those with an owner reference
// matching owner's coordinates (and namespace, for a namespaced owner) and
// those referring to owner.UID otherwise; one may be in both.
func partitionDependents(dependents []*node, owner objectReference) (matching, nonmatching []*node) {
	for _, dep := range dependents {
		match, mismatch := false, false
		if owner.Namespace != "" && owner.Namespace != dep.identity.Namespace {
			mismatch = true
		} else {
			for _, ref := range dep.getOwners() {
				if ref.UID != owner.UID {
					continue
				}
				if owner.matches(ref) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			nonmatching = append(nonmatching, dep)
		}
	}
	return matching, nonmatching
}

// referenceLess orders references by kind, apiVersion, namespace, name, uid.
func referenceLess(a, b objectReference) bool {
	return slices.Compare(
		[]string{a.Kind, a.APIVersion, a.Namespace, a.Name, string(a.UID)},
		[]string{b.Kind, b.APIVersion, b.Namespace, b.Name, string(b.UID)}) < 0
}

// alternateOwnerIdentity returns another identity deps give absent.UID: the
// first (by referenceLess) after absent, else the first; nil if none.
func alternateOwnerIdentity(deps []*node, absent objectReference) *objectReference {
	clusterScoped := absent.Namespace == ""
	seen := map[objectReference]bool{absent: true}
	var first, firstAfter *objectReference
	for _, dep := range deps {
		for _, o := range dep.getOwners() {
			if o.UID != absent.UID {
				continue
			}
			if absent.matches(o) && (clusterScoped || absent.Namespace == dep.identity.Namespace) {
				continue
			}
			ref := ownerIdentity(o, dep.identity.Namespace)
			if clusterScoped && ref.APIVersion == absent.APIVersion && ref.Kind == absent.Kind {
				ref.Namespace = "" // that kind is cluster-scoped
			}
			if seen[ref] {
				continue
			}
			seen[ref] = true
			if first == nil || referenceLess(ref, *first) {
				first = &ref
			}
			if referenceLess(absent, ref) && (firstAfter == nil || referenceLess(ref, *firstAfter)) {
				firstAfter = &ref
			}
		}
	}
	if firstAfter != nil {
		return firstAfter
	}
	return first
}

type ownerRefPair struct {
	oldRef, newRef metav1.OwnerReference
}

// referencesDiffs compares owner references by UID.
func referencesDiffs(old, updated []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []ownerRefPair) {
	byUID := make(map[string]metav1.OwnerReference, len(old))
	for _, r := range old {
		byUID[string(r.UID)] = r
	}
	for _, r := range updated {
		o, ok := byUID[string(r.UID)]
		switch {
		case !ok:
			added = append(added, r)
		case !reflect.DeepEqual(o, r):
			changed = append(changed, ownerRefPair{oldRef: o, newRef: r})
		}
		delete(byUID, string(r.UID))
	}
	for _, r := range old {
		if _, ok := byUID[string(r.UID)]; ok {
			removed = append(removed, r)
		}
	}
	return added, removed, changed
}

func beingDeleted(obj metav1.Object) bool { return obj.GetDeletionTimestamp() != nil }

func hasFinalizer(obj metav1.Object, finalizer string) bool {
	return slices.Contains(obj.GetFinalizers(), finalizer)
}

// deletionStartsWithFinalizer: obj is being deleted with finalizer, and
// oldObj (nil for adds) was not.
func deletionStartsWithFinalizer(oldObj, obj metav1.Object, finalizer string) bool {
	if !beingDeleted(obj) || !hasFinalizer(obj, finalizer) {
		return false
	}
	return oldObj == nil || !beingDeleted(oldObj) || !hasFinalizer(oldObj, finalizer)
}
