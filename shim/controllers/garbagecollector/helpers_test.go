package garbagecollector

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

var (
	cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	nsGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

// fixture is a collector over a fake metadata client; tests drive the
// graph builder and the workers by hand, in the test's goroutine.
type fixture struct {
	gc       *GarbageCollector
	client   *metadatafake.FakeMetadataClient
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T, objects ...*metav1.PartialObjectMetadata) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, 0, len(objects))
	for _, o := range objects {
		objs = append(objs, o)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cmGVK, meta.RESTScopeNamespace)
	mapper.Add(nsGVK, meta.RESTScopeRoot)
	recorder := record.NewFakeRecorder(10)
	gc := New(Config{Metadata: client, Mapper: mapper, Recorder: recorder, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() {
		gc.builder.graphChanges.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
	})
	return &fixture{gc: gc, client: client, recorder: recorder}
}

// observe feeds an informer event to the graph builder.
func (f *fixture) observe(t eventType, obj, old *metav1.PartialObjectMetadata) {
	ev := &event{eventType: t, obj: obj, gvk: obj.GroupVersionKind()}
	if old != nil {
		ev.oldObj = old
	}
	f.gc.builder.apply(ev)
}

// drainGraphChanges applies the virtual events workers queued.
func (f *fixture) drainGraphChanges() {
	for f.gc.builder.graphChanges.Len() > 0 {
		f.gc.builder.processGraphChanges()
	}
}

// queued lists the names in a queue, without consuming it.
func queued(q interface{ Len() int }, get func() (*node, bool), put func(*node)) []string {
	var names []string
	var items []*node
	for q.Len() > 0 {
		n, _ := get()
		items = append(items, n)
		names = append(names, n.identity.Name)
	}
	for _, n := range items {
		put(n)
	}
	return names
}

func (f *fixture) deleteQueue() []string {
	q := f.gc.attemptToDelete
	return queued(q, q.Get, func(n *node) { q.Done(n); q.Add(n) })
}

func (f *fixture) orphanQueue() []string {
	q := f.gc.attemptToOrphan
	return queued(q, q.Get, func(n *node) { q.Done(n); q.Add(n) })
}

// writes returns the fake client's actions other than get and list.
func (f *fixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

type objOption func(*metav1.PartialObjectMetadata)

func obj(gvk schema.GroupVersionKind, ns, name string, opts ...objOption) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), ResourceVersion: "1"},
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

func cm(ns, name string, opts ...objOption) *metav1.PartialObjectMetadata {
	return obj(cmGVK, ns, name, opts...)
}

func owned(owner *metav1.PartialObjectMetadata, block bool) objOption {
	return func(o *metav1.PartialObjectMetadata) {
		o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{APIVersion: owner.APIVersion,
			Kind: owner.Kind, Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(block)})
	}
}

func deleting(finalizers ...string) objOption {
	return func(o *metav1.PartialObjectMetadata) {
		o.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		o.Finalizers = append(o.Finalizers, finalizers...)
	}
}

func finalizers(f ...string) objOption {
	return func(o *metav1.PartialObjectMetadata) { o.Finalizers = append(o.Finalizers, f...) }
}

func uid(u string) objOption {
	return func(o *metav1.PartialObjectMetadata) { o.UID = types.UID(u) }
}

func identityOf(o *metav1.PartialObjectMetadata) objectReference {
	return objectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
}
