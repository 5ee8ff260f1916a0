package garbagecollector

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// TestAttemptToDeleteItem: upstream's solid/dangling/waiting classification
// (S002 "Owners and Dependents"; checklist I.66-I.68).
func TestAttemptToDeleteItem(t *testing.T) {
	owner := cm("a", "owner")
	waiting := cm("a", "waiting", deleting(metav1.FinalizerDeleteDependents))
	absent := cm("a", "absent")
	tests := []struct {
		name string
		live []*metav1.PartialObjectMetadata // besides the item
		item *metav1.PartialObjectMetadata
		// grandchild: the item has a dependent of its own in the graph;
		// grandchildWaiting: one waiting for its own dependents (a cycle).
		grandchild, grandchildWaiting bool
		wantAction                    queueAction
		// want: the write, as "verb policy-or-patch".
		want []string
	}{
		{name: "I.67 owner absent: background", item: cm("a", "d", owned(absent, false)),
			want: []string{"delete Background"}},
		{name: "I.66 owner UID differs from the live owner's: absent", live: []*metav1.PartialObjectMetadata{cm("a", "absent", uid("other"))},
			item: cm("a", "d", owned(absent, false)), want: []string{"delete Background"}},
		{name: "solid owner: kept", live: []*metav1.PartialObjectMetadata{owner},
			item: cm("a", "d", owned(owner, false))},
		{name: "solid and dangling owners: the dangling reference is patched away", live: []*metav1.PartialObjectMetadata{owner},
			item: cm("a", "d", owned(owner, false), owned(absent, false)),
			want: []string{`patch {"metadata":{"uid":"a-d","ownerReferences":[{"$patch":"delete","uid":"a-absent"}]}}`}},
		{name: "solid and waiting owners: the waiting reference is patched away", live: []*metav1.PartialObjectMetadata{owner, waiting},
			item: cm("a", "d", owned(owner, false), owned(waiting, true)),
			want: []string{`patch {"metadata":{"uid":"a-d","ownerReferences":[{"$patch":"delete","uid":"a-waiting"}]}}`}},
		{name: "I.68 waiting owner, no dependents: background", live: []*metav1.PartialObjectMetadata{waiting},
			item: cm("a", "d", owned(waiting, true)), want: []string{"delete Background"}},
		{name: "I.68 waiting owner, dependents: foreground", live: []*metav1.PartialObjectMetadata{waiting},
			item: cm("a", "d", owned(waiting, true)), grandchild: true, want: []string{"delete Foreground"}},
		{name: "cycle: a waiting owner and a waiting dependent: references unblocked, then foreground", live: []*metav1.PartialObjectMetadata{waiting},
			item: cm("a", "d", owned(waiting, true)), grandchildWaiting: true,
			want: []string{`patch {"metadata":{"uid":"a-d","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"waiting","uid":"a-waiting","blockOwnerDeletion":false}]}}`, "delete Foreground"}},
		{name: "cycle, references unblocked already: foreground only (an empty patch would drop them)", live: []*metav1.PartialObjectMetadata{waiting},
			item: cm("a", "d", owned(waiting, false)), grandchildWaiting: true, want: []string{"delete Foreground"}},
		{name: "orphan finalizer honoured", item: cm("a", "d", owned(absent, false), finalizers(metav1.FinalizerOrphanDependents)),
			want: []string{"delete Orphan"}},
		{name: "foreground finalizer honoured", item: cm("a", "d", owned(absent, false), finalizers(metav1.FinalizerDeleteDependents)),
			want: []string{"delete Foreground"}},
		{name: "S002 cluster-scoped dependent of a namespaced owner: never collected", live: []*metav1.PartialObjectMetadata{owner},
			item: obj(nsGVK, "", "d", owned(owner, false))},
		{name: "no owners: kept", item: cm("a", "d")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append(tt.live, tt.item)...)
			f.observe(addEvent, tt.item, nil)
			if tt.grandchild {
				f.observe(addEvent, cm("a", "grandchild", owned(tt.item, true)), nil)
			}
			if tt.grandchildWaiting {
				f.observe(addEvent, cm("a", "grandchild", owned(tt.item, true), deleting(metav1.FinalizerDeleteDependents)), nil)
			}
			n, _ := f.gc.graph.read(tt.item.UID)
			if got := f.gc.attemptToDeleteWorker(context.Background(), n); got != tt.wantAction {
				t.Errorf("action %v, want %v", got, tt.wantAction)
			}
			if got := describe(f.writes()); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// describe renders deletes as "delete <policy>" (checking the UID
// precondition) and patches as "patch <body>".
func describe(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a := a.(type) {
		case clienttesting.DeleteAction:
			opts := a.GetDeleteOptions()
			s := "delete " + string(*opts.PropagationPolicy)
			if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != types.UID(a.GetNamespace()+"-"+a.GetName()) {
				s += " without UID precondition"
			}
			out = append(out, s)
		case clienttesting.PatchAction:
			out = append(out, "patch "+string(a.GetPatch()))
		default:
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// TestAttemptToDeleteAbsentItem: an item the API server does not have (or
// has with another UID) leaves the graph through a virtual delete event.
func TestAttemptToDeleteAbsentItem(t *testing.T) {
	for _, live := range []*metav1.PartialObjectMetadata{nil, cm("a", "d", uid("recreated"))} {
		var objs []*metav1.PartialObjectMetadata
		if live != nil {
			objs = append(objs, live)
		}
		f := newFixture(t, objs...)
		item := cm("a", "d")
		f.observe(addEvent, item, nil)
		n, _ := f.gc.graph.read(item.UID)
		if got := f.gc.attemptToDeleteWorker(context.Background(), n); got != forgetItem {
			t.Errorf("live %v: action %v, want forget", live != nil, got)
		}
		f.drainGraphChanges()
		if _, ok := f.gc.graph.read(item.UID); ok {
			t.Errorf("live %v: item still in the graph", live != nil)
		}
	}
}

// TestForegroundOwner (I.68): the owner's foregroundDeletion finalizer is
// removed only once no dependent with blockOwnerDeletion: true remains.
func TestForegroundOwner(t *testing.T) {
	owner := cm("a", "owner", deleting(metav1.FinalizerDeleteDependents))
	blocking := cm("a", "blocking", owned(owner, true))
	nonblocking := cm("a", "nonblocking", owned(owner, false))
	f := newFixture(t, owner, blocking, nonblocking)
	f.observe(addEvent, blocking, nil)
	f.observe(addEvent, nonblocking, nil)
	f.observe(addEvent, owner, nil)
	if got := strings.Join(sorted(f.deleteQueue()), ","); got != "blocking,nonblocking,owner" {
		t.Fatalf("queued %s, want the owner and its dependents", got)
	}
	n, _ := f.gc.graph.read(owner.UID)
	ctx := context.Background()
	if err := f.gc.attemptToDeleteItem(ctx, n); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes while a blocking dependent remains: %v", describe(w))
	}
	f.observe(deleteEvent, blocking, nil)
	if err := f.gc.attemptToDeleteItem(ctx, n); err != nil {
		t.Fatal(err)
	}
	want := `patch {"metadata":{"resourceVersion":"1","finalizers":null}}`
	if got := strings.Join(describe(f.writes()), "\n"); got != want {
		t.Fatalf("writes %s, want %s", got, want)
	}
}

// TestOrphan (I.68 Orphan, I.70): the owner reference is stripped from
// each dependent, then the orphan finalizer from the owner.
func TestOrphan(t *testing.T) {
	owner := cm("a", "owner", deleting(metav1.FinalizerOrphanDependents))
	dep := cm("a", "dep", owned(owner, true))
	f := newFixture(t, owner, dep)
	f.observe(addEvent, dep, nil)
	f.observe(updateEvent, owner, cm("a", "owner"))
	if got := f.orphanQueue(); len(got) != 1 || got[0] != "owner" {
		t.Fatalf("orphan queue %v", got)
	}
	if !f.gc.processAttemptToOrphan(context.Background()) {
		t.Fatal("queue shut down")
	}
	want := []string{
		`patch {"metadata":{"uid":"a-dep","ownerReferences":[{"$patch":"delete","uid":"a-owner"}]}}`,
		`patch {"metadata":{"resourceVersion":"1","finalizers":null}}`,
	}
	if got := describe(f.writes()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f.gc.attemptToOrphan.Len() != 0 {
		t.Error("orphaning requeued")
	}
}
