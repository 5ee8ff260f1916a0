package generic

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// noStorage completes a Store without storage, for tests of its wiring.
var noStorage = generic.RESTOptions{
	StorageConfig: &storagebackend.ConfigForResource{},
	Decorator: func(*storagebackend.ConfigForResource, string, func(obj runtime.Object) (string, error),
		func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		return nil, func() {}, nil
	},
	ResourcePrefix: "/services",
}

// TestStoreHooks: StoreHooks gets the main Store and the status Store,
// distinct, and what it sets on each stays there.
func TestStoreHooks(t *testing.T) {
	var created, statusDeleted int
	k := &Kind{
		Version: "v1", Resource: "services", Singular: "service", Namespaced: true, Status: true,
		New:     func() runtime.Object { return &corev1.Service{} },
		NewList: func() runtime.Object { return &corev1.ServiceList{} },
		StoreHooks: func(main, status *genericregistry.Store) {
			if main == status || status == nil {
				t.Fatalf("StoreHooks(%p, %p): want two Stores", main, status)
			}
			main.BeginCreate = func(context.Context, runtime.Object, *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
				created++
				return func(context.Context, bool) {}, nil
			}
			status.AfterDelete = func(runtime.Object, *metav1.DeleteOptions) { statusDeleted++ }
		},
	}
	main, status, err := NewREST(k, noStorage)
	if err != nil {
		t.Fatal(err)
	}
	if main.BeginCreate == nil || main.AfterDelete != nil {
		t.Fatalf("main Store: BeginCreate set %v, AfterDelete set %v; want only BeginCreate", main.BeginCreate != nil, main.AfterDelete != nil)
	}
	if status.store.BeginCreate != nil || status.store.AfterDelete == nil {
		t.Fatalf("status Store: BeginCreate set %v, AfterDelete set %v; want only AfterDelete", status.store.BeginCreate != nil, status.store.AfterDelete != nil)
	}
	_, _ = main.BeginCreate(context.Background(), &corev1.Service{}, nil)
	status.store.AfterDelete(&corev1.Service{}, nil)
	if created != 1 || statusDeleted != 1 {
		t.Errorf("hooks ran %d, %d times; want 1, 1", created, statusDeleted)
	}

	// Without Status, the hook gets no status Store.
	k.Status = false
	k.StoreHooks = func(_, status *genericregistry.Store) {
		if status != nil {
			t.Errorf("status Store %p for a kind without Status", status)
		}
	}
	if _, _, err := NewREST(k, noStorage); err != nil {
		t.Fatal(err)
	}
}
