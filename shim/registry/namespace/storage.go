package namespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiffnode/skiff/shim/printers"
)

// Resource is the namespaces group resource.
var Resource = schema.GroupResource{Resource: "namespaces"}

// REST is the namespaces endpoint. It wraps the Store rather than embedding
// it, as upstream: the Store's DeleteCollection would bypass Delete's
// life-cycle rules, so namespaces have no deletecollection verb.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Lister                 = &REST{}
	_ rest.Getter                 = &REST{}
	_ rest.Watcher                = &REST{}
	_ rest.Creater                = &REST{} //nolint:misspell // the API's spelling
	_ rest.Updater                = &REST{}
	_ rest.GracefulDeleter        = &REST{}
	_ rest.ShortNamesProvider     = &REST{}
	_ rest.SingularNameProvider   = &REST{}
	_ rest.ResetFieldsStrategy    = &REST{}
	_ rest.StorageVersionProvider = &REST{}
)

// NewREST returns the namespaces, namespaces/status and namespaces/finalize
// endpoints, stored through optsGetter.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, *SubresourceREST, error) {
	main := newStrategy(mainEndpoint)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Namespace{} },
		NewListFunc:               func() runtime.Object { return &corev1.NamespaceList{} },
		PredicateFunc:             predicate,
		DefaultQualifiedResource:  Resource,
		SingularQualifiedResource: schema.GroupResource{Resource: "namespace"},
		CreateStrategy:            main,
		UpdateStrategy:            main,
		DeleteStrategy:            main,
		ResetFieldsStrategy:       main,
		ReturnDeletedObject:       true,
		ShouldDeleteDuringUpdate:  shouldDeleteDuringUpdate,
		TableConvertor:            printers.Namespaces(),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, nil, nil, fmt.Errorf("store for namespaces: %w", err)
	}
	status, finalize := *store, *store
	status.UpdateStrategy, status.ResetFieldsStrategy = newStrategy(statusEndpoint), newStrategy(statusEndpoint)
	finalize.UpdateStrategy, finalize.ResetFieldsStrategy = newStrategy(finalizeEndpoint), newStrategy(finalizeEndpoint)
	return &REST{store: store}, &StatusREST{SubresourceREST{store: &status}}, &SubresourceREST{store: &finalize}, nil
}

// shouldDeleteDuringUpdate adds upstream's namespace rule to the Store's
// own (ShouldDeleteNamespaceDuringUpdate): an update that empties the last
// finalizer list of a namespace being deleted deletes it.
func shouldDeleteDuringUpdate(ctx context.Context, key string, obj, existing runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) == 0 && genericregistry.ShouldDeleteDuringUpdate(ctx, key, obj, existing)
}

// New implements rest.Storage.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage.
func (r *REST) Destroy() { r.store.Destroy() }

// NewList implements rest.Lister.
func (r *REST) NewList() runtime.Object { return r.store.NewList() }

// NamespaceScoped implements rest.Scoper.
func (r *REST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *REST) GetSingularName() string { return r.store.GetSingularName() }

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return []string{"ns"} }

// StorageVersion implements rest.StorageVersionProvider.
func (r *REST) StorageVersion() runtime.GroupVersioner { return r.store.StorageVersion() }

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *REST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// List implements rest.Lister.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.store.List(ctx, options)
}

// ConvertToTable implements rest.TableConvertor.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// Get implements rest.Getter.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Watch implements rest.Watcher.
func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.store.Watch(ctx, options)
}

// Create creates a namespace (rest.Creater's method).
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.store.Create(ctx, obj, createValidation, options)
}

// Update implements rest.Updater.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}

// SubresourceREST is namespaces/finalize (update only, as upstream) and the
// base of namespaces/status: a Store copy with the endpoint's strategy.
type SubresourceREST struct {
	store *genericregistry.Store
}

var _ rest.Updater = &SubresourceREST{}

// New implements rest.Storage.
func (r *SubresourceREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main REST owns the storage.
func (r *SubresourceREST) Destroy() {}

// Update implements rest.Updater; subresources never create.
func (r *SubresourceREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *SubresourceREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// StatusREST adds get (and so patch) to namespaces/status.
type StatusREST struct {
	SubresourceREST
}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// ConvertToTable implements rest.TableConvertor.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
