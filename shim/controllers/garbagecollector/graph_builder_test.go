package garbagecollector

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// TestVirtualOwner: a dependent seen before its owner creates a virtual
// owner node, queued for verification; the owner's own event makes it
// observed, keeping its dependents.
func TestVirtualOwner(t *testing.T) {
	f := newFixture(t)
	owner := cm("a", "owner")
	f.observe(addEvent, cm("a", "dep", owned(owner, false)), nil)
	n, ok := f.gc.graph.read(owner.UID)
	if !ok || n.isObserved() {
		t.Fatalf("owner node: present %v observed %v, want a virtual node", ok, ok && n.isObserved())
	}
	if got := f.deleteQueue(); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("queued %v, want the virtual owner", got)
	}
	f.observe(addEvent, owner, nil)
	n, _ = f.gc.graph.read(owner.UID)
	if !n.isObserved() || n.dependentsLength() != 1 {
		t.Fatalf("owner after its event: observed %v dependents %d", n.isObserved(), n.dependentsLength())
	}
}

// TestDeletedOwnerQueuesDependents: an owner's delete event queues its
// dependents and records it absent, so they need not GET it.
func TestDeletedOwnerQueuesDependents(t *testing.T) {
	f := newFixture(t)
	owner := cm("a", "owner")
	f.observe(addEvent, owner, nil)
	f.observe(addEvent, cm("a", "d1", owned(owner, false)), nil)
	f.observe(addEvent, cm("a", "d2", owned(owner, true)), nil)
	f.observe(deleteEvent, owner, nil)
	if got := sorted(f.deleteQueue()); !slices.Equal(got, []string{"d1", "d2"}) {
		t.Fatalf("queued %v", got)
	}
	if !f.gc.absent.has(identityOf(owner)) {
		t.Error("owner not recorded absent")
	}
}

// TestTransitions: the start of an orphan deletion queues the owner for
// orphaning; the start of a foreground deletion marks it and queues it
// with its dependents.
func TestTransitions(t *testing.T) {
	tests := []struct {
		finalizer            string
		wantDelete, wantOrph []string
	}{
		{finalizer: metav1.FinalizerOrphanDependents, wantOrph: []string{"owner"}},
		{finalizer: metav1.FinalizerDeleteDependents, wantDelete: []string{"dep", "owner"}},
		{finalizer: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.finalizer, func(t *testing.T) {
			f := newFixture(t)
			owner := cm("a", "owner")
			f.observe(addEvent, owner, nil)
			f.observe(addEvent, cm("a", "dep", owned(owner, true)), nil)
			f.observe(updateEvent, cm("a", "owner", deleting(tt.finalizer)), owner)
			if got := sorted(f.deleteQueue()); !slices.Equal(got, tt.wantDelete) {
				t.Errorf("attemptToDelete %v, want %v", got, tt.wantDelete)
			}
			if got := f.orphanQueue(); !slices.Equal(got, tt.wantOrph) {
				t.Errorf("attemptToOrphan %v, want %v", got, tt.wantOrph)
			}
			n, _ := f.gc.graph.read(owner.UID)
			if got, want := n.isDeletingDependents(), tt.finalizer == metav1.FinalizerDeleteDependents; got != want {
				t.Errorf("deletingDependents %v, want %v", got, want)
			}
		})
	}
}

// TestInvalidNamespaceOwnerRef (S002 note): a namespaced dependent naming
// an observed owner of another namespace gets a Warning event
// OwnerRefInvalidNamespace and is queued, in either observation order.
func TestInvalidNamespaceOwnerRef(t *testing.T) {
	owner := cm("a", "owner")
	dep := cm("b", "dep", owned(owner, false))
	for _, order := range [][]*metav1.PartialObjectMetadata{{owner, dep}, {dep, owner}} {
		f := newFixture(t)
		for _, o := range order {
			f.observe(addEvent, o, nil)
		}
		select {
		case ev := <-f.recorder.Events:
			if !strings.HasPrefix(ev, "Warning OwnerRefInvalidNamespace ") || !strings.Contains(ev, `namespace "b"`) {
				t.Errorf("event %q", ev)
			}
		default:
			t.Errorf("order %s first: no event", order[0].Name)
		}
		if got := f.deleteQueue(); !slices.Contains(got, "dep") {
			t.Errorf("order %s first: queued %v, want dep", order[0].Name, got)
		}
	}
}

// TestUnblockedOwnerQueued: a dependent dropping its blocking reference
// (or setting blockOwnerDeletion false) queues the owner.
func TestUnblockedOwnerQueued(t *testing.T) {
	owner := cm("a", "owner")
	before := cm("a", "dep", owned(owner, true))
	for name, after := range map[string]*metav1.PartialObjectMetadata{
		"removed":   cm("a", "dep"),
		"unblocked": cm("a", "dep", owned(owner, false)),
	} {
		f := newFixture(t)
		f.observe(addEvent, owner, nil)
		f.observe(addEvent, before, nil)
		f.observe(updateEvent, after, before)
		if got := f.deleteQueue(); !slices.Equal(got, []string{"owner"}) {
			t.Errorf("%s: queued %v, want owner", name, got)
		}
	}
}

func TestReferencesDiffs(t *testing.T) {
	ref := func(uid string, block bool) metav1.OwnerReference {
		return metav1.OwnerReference{UID: types.UID(uid), BlockOwnerDeletion: ptr.To(block)}
	}
	added, removed, changed := referencesDiffs(
		[]metav1.OwnerReference{ref("kept", false), ref("changed", true), ref("removed", false)},
		[]metav1.OwnerReference{ref("kept", false), ref("changed", false), ref("added", false)})
	if len(added) != 1 || added[0].UID != "added" || len(removed) != 1 || removed[0].UID != "removed" ||
		len(changed) != 1 || changed[0].newRef.UID != "changed" {
		t.Fatalf("added %v removed %v changed %v", added, removed, changed)
	}
}

func TestAlternateOwnerIdentity(t *testing.T) {
	absent := objectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "x", UID: "u"}
	dep := func(ns, kind string) *node {
		return newNode(objectReference{Namespace: ns, Name: "d-" + kind},
			[]metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: "x", UID: "u"}})
	}
	tests := []struct {
		deps []*node
		want string
	}{
		{deps: []*node{dep("a", "ConfigMap")}, want: "<nil>"},
		{deps: []*node{dep("a", "Secret"), dep("a", "Pod")}, want: "Pod"}, // the first after ConfigMap
		{deps: []*node{dep("a", "Binding")}, want: "Binding"},             // none after: the first
	}
	for _, tt := range tests {
		got := "<nil>"
		if alt := alternateOwnerIdentity(tt.deps, absent); alt != nil {
			got = alt.Kind
		}
		if got != tt.want {
			t.Errorf("alternate %s, want %s", got, tt.want)
		}
	}
}
