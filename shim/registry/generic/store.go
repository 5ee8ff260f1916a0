package generic

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// REST is a kind's main endpoint: the generic Store plus discovery extras.
type REST struct {
	*genericregistry.Store
	kind *Kind
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return r.kind.ShortNames }

// Categories implements rest.CategoriesProvider.
func (r *REST) Categories() []string { return r.kind.Categories }

// StatusREST is the status subresource: get and update (put, patch, apply)
// of the same object, with the status strategy.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
)

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main Store owns the storage.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater. Create on update is never allowed, and
// the status strategy keeps the spec.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable implements rest.TableConvertor.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// UpdateREST is an update-only subresource (Kind.UpdateSubresources): get,
// and update (put, patch) of the same object with the subresource's
// strategy, as upstream's pods/resize ResizeREST. Like it, it resets no
// fields for server-side apply and converts no tables.
type UpdateREST struct {
	store *genericregistry.Store
}

var _ rest.Patcher = &UpdateREST{}

// New implements rest.Storage.
func (r *UpdateREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main Store owns the storage.
func (r *UpdateREST) Destroy() {}

// Get implements rest.Getter: the whole object, as the main resource's.
func (r *UpdateREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater. Create on update is never allowed.
func (r *UpdateREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// gracefulStrategy adds graceful deletion (rest.RESTGracefulDeleteStrategy)
// for kinds that have it.
type gracefulStrategy struct {
	*strategy
}

func (s gracefulStrategy) CheckGracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	return s.kind.GracefulDelete(obj, options)
}

// Endpoints are a kind's main endpoint and its subresources; Status and
// Scale are nil for kinds without them, Subresources holds the kind's
// UpdateSubresources by name.
type Endpoints struct {
	Main         *REST
	Status       *StatusREST
	Scale        *ScaleREST
	Subresources map[string]*UpdateREST
}

// NewEndpoints returns the endpoints of k, stored through optsGetter.
func NewEndpoints(k *Kind, optsGetter generic.RESTOptionsGetter) (Endpoints, error) {
	main, status, err := NewREST(k, optsGetter)
	if err != nil {
		return Endpoints{}, err
	}
	e := Endpoints{Main: main, Status: status}
	if k.Scale != nil {
		e.Scale = &ScaleREST{store: main.Store, funcs: k.Scale,
			gr: schema.GroupResource{Group: k.Group, Resource: k.Resource + "/scale"}}
	}
	for name := range k.UpdateSubresources {
		if e.Subresources == nil {
			e.Subresources = map[string]*UpdateREST{}
		}
		store := *main.Store
		store.UpdateStrategy = k.UpdateStrategy(name)
		e.Subresources[name] = &UpdateREST{store: &store}
	}
	return e, nil
}

// NewREST returns the main and (for kinds with Status) status endpoints
// of k, stored through optsGetter.
func NewREST(k *Kind, optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	gr := schema.GroupResource{Group: k.Group, Resource: k.Resource}
	main := newStrategy(k, false)
	var deleteStrategy rest.RESTDeleteStrategy = main
	if k.GracefulDelete != nil {
		deleteStrategy = gracefulStrategy{main}
	}
	store := &genericregistry.Store{
		NewFunc:                   k.New,
		NewListFunc:               k.NewList,
		PredicateFunc:             k.predicate,
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: schema.GroupResource{Group: k.Group, Resource: k.Singular},
		CreateStrategy:            main,
		UpdateStrategy:            main,
		DeleteStrategy:            deleteStrategy,
		ResetFieldsStrategy:       main,
		ReturnDeletedObject:       k.GracefulDelete != nil,
		TableConvertor:            k.Table,
	}
	if store.TableConvertor == nil {
		store.TableConvertor = rest.NewDefaultTableConvertor(gr)
	}
	if k.TTL > 0 {
		ttl := k.TTL
		store.TTLFunc = func(runtime.Object, uint64, bool) (uint64, error) { return ttl, nil }
	}
	options := &generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: k.GetAttrs}
	if k.TriggerField != "" {
		options.TriggerFunc = storage.IndexerFuncs{k.TriggerField: k.Trigger}
	}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, nil, fmt.Errorf("store for %s: %w", gr, err)
	}
	if !k.Status {
		if k.StoreHooks != nil {
			k.StoreHooks(store, nil)
		}
		return &REST{Store: store, kind: k}, nil, nil
	}
	statusStore := *store
	status := newStrategy(k, true)
	statusStore.UpdateStrategy = status
	statusStore.ResetFieldsStrategy = status
	if k.StoreHooks != nil {
		k.StoreHooks(store, &statusStore)
	}
	return &REST{Store: store, kind: k}, &StatusREST{store: &statusStore}, nil
}

// objectMeta returns obj's metadata accessor.
func objectMeta(obj runtime.Object) (metav1.Object, error) {
	return meta.Accessor(obj)
}
