package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectReference identifies an object by the coordinates of an owner
// reference (apiVersion, kind, name, uid) plus its namespace. It is
// comparable; two references are the same object only if all fields match.
type objectReference struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

// ownerIdentity is the identity an owner reference of a dependent in
// namespace gives its owner (upstream: a virtual owner is assumed to live
// in its dependent's namespace until observed).
func ownerIdentity(ref metav1.OwnerReference, namespace string) objectReference {
	return objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: ref.UID}
}

// matches reports whether ref has r's coordinates (uid, name, kind,
// apiVersion); the namespace is not part of an owner reference.
func (r objectReference) matches(ref metav1.OwnerReference) bool {
	return r.UID == ref.UID && r.Name == ref.Name && r.Kind == ref.Kind && r.APIVersion == ref.APIVersion
}

func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// node is one object in the dependency graph. The graph builder (one
// goroutine) is its only writer; workers read it concurrently, so every
// mutable field is behind mu. identity never changes: a node whose
// identity must change is replaced by a clone (as upstream's graph.go).
type node struct {
	identity objectReference

	mu sync.RWMutex
	// dependents have an owner reference to identity.UID.
	dependents map[*node]struct{}
	// owners are the object's owner references as last observed.
	owners []metav1.OwnerReference
	// deletingDependents: deletionTimestamp set and the foregroundDeletion
	// finalizer present.
	deletingDependents bool
	// beingDeleted: deletionTimestamp set (a one-way trip).
	beingDeleted bool
	// virtual: created for an owner reference, never observed by an informer.
	virtual bool
}

func newNode(id objectReference, owners []metav1.OwnerReference) *node {
	return &node{identity: id, dependents: map[*node]struct{}{}, owners: owners}
}

// cloneAs returns a copy of n with identity id; the caller replaces n in
// the graph with it. Called by the graph builder only.
func (n *node) cloneAs(id objectReference) *node {
	n.mu.RLock()
	defer n.mu.RUnlock()
	c := &node{
		identity:           id,
		dependents:         make(map[*node]struct{}, len(n.dependents)),
		owners:             append([]metav1.OwnerReference(nil), n.owners...),
		deletingDependents: n.deletingDependents,
		beingDeleted:       n.beingDeleted,
		virtual:            n.virtual,
	}
	for d := range n.dependents {
		c.dependents[d] = struct{}{}
	}
	return c
}

func (n *node) markBeingDeleted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.beingDeleted = true
}

func (n *node) isBeingDeleted() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.beingDeleted
}

func (n *node) markObserved() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.virtual = false
}

func (n *node) isObserved() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return !n.virtual
}

func (n *node) markDeletingDependents() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deletingDependents = true
}

func (n *node) isDeletingDependents() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.deletingDependents
}

func (n *node) addDependent(d *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dependents[d] = struct{}{}
}

func (n *node) deleteDependent(d *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.dependents, d)
}

// replaceDependent swaps old for replacement if old is a dependent.
func (n *node) replaceDependent(old, replacement *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.dependents[old]; ok {
		delete(n.dependents, old)
		n.dependents[replacement] = struct{}{}
	}
}

func (n *node) dependentsLength() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.dependents)
}

// getDependents returns a snapshot of the dependents.
func (n *node) getDependents() []*node {
	n.mu.RLock()
	defer n.mu.RUnlock()
	ret := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		ret = append(ret, d)
	}
	return ret
}

// getOwners returns a copy of the owner references.
func (n *node) getOwners() []metav1.OwnerReference {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return append([]metav1.OwnerReference(nil), n.owners...)
}

func (n *node) setOwners(owners []metav1.OwnerReference) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.owners = owners
}

// blockingDependents are the dependents whose owner reference to n has
// blockOwnerDeletion: true; only they hold a foreground deletion of n.
func (n *node) blockingDependents() []*node {
	var ret []*node
	for _, d := range n.getDependents() {
		for _, o := range d.getOwners() {
			if o.UID == n.identity.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				ret = append(ret, d)
				break
			}
		}
	}
	return ret
}

// graph maps UIDs to nodes. Safe for concurrent use.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func newGraph() *graph { return &graph{nodes: map[types.UID]*node{}} }

func (g *graph) read(uid types.UID) (*node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

func (g *graph) write(n *node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes[n.identity.UID] = n
}

func (g *graph) remove(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.nodes, uid)
}
