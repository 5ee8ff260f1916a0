package garbagecollector

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// TestMonitorsShareInformers: a resource with a shared informer is
// watched through a handler on it (typed objects reach the graph as
// metav1.Object), the others through a metadata informer of the
// collector's own; stopping a shared monitor removes its handler and
// leaves the shared informer running.
func TestMonitorsShareInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	typed := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "u-cm"}})
	factory := informers.NewSharedInformerFactory(typed, 0)
	cmGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	var sharedFor []schema.GroupVersionResource
	shared := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		if gvr != cmGVR {
			return nil
		}
		sharedFor = append(sharedFor, gvr)
		inf := factory.Core().V1().ConfigMaps().Informer()
		factory.Start(ctx.Done())
		return inf
	}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, obj(nsGVK, "", "ns", uid("u-ns")))
	changes := workqueue.NewTyped[*event]()
	defer changes.ShutDown()
	m := &monitors{client: meta, shared: shared, graphChanges: changes}
	defer m.stop()
	if err := m.sync(ctx, map[schema.GroupVersionResource]schema.GroupVersionKind{cmGVR: cmGVK, nsGVR: nsGVK}); err != nil {
		t.Fatal(err)
	}
	if len(sharedFor) != 1 {
		t.Fatalf("shared asked for %v, want configmaps once", sharedFor)
	}
	if !waitFor(withTimeout(t, ctx), m.hasSynced) {
		t.Fatal("monitors never synced")
	}
	got := map[string]schema.GroupVersionKind{}
	for len(got) < 2 {
		ev, _ := changes.Get()
		got[string(ev.obj.GetUID())] = ev.gvk
		changes.Done(ev)
	}
	if got["u-cm"] != cmGVK || got["u-ns"] != nsGVK {
		t.Fatalf("events = %v, want the ConfigMap (shared) and the Namespace (metadata)", got)
	}

	// The ConfigMaps go: the handler is removed, the shared informer runs on.
	if err := m.sync(ctx, map[schema.GroupVersionResource]schema.GroupVersionKind{nsGVR: nsGVK}); err != nil {
		t.Fatal(err)
	}
	if _, err := typed.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm2", UID: "u-cm2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lister := factory.Core().V1().ConfigMaps().Lister()
	if !waitFor(withTimeout(t, ctx), func() bool { _, err := lister.ConfigMaps("ns").Get("cm2"); return err == nil }) {
		t.Fatal("the shared informer stopped with the monitor")
	}
	if n := changes.Len(); n != 0 {
		t.Fatalf("%d events after the ConfigMaps' monitor stopped, want 0", n)
	}
}

func withTimeout(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
