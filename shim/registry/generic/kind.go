// Package generic builds a k8s.io/apiserver generic registry Store for one
// served kind from a Kind description: the strategy (metadata validation,
// status reset, per-kind hooks), field attributes for selectors, the status
// subresource, update-only subresources (pods/resize) and the short names
// kubectl discovers.
package generic

import (
	"context"
	"reflect"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiffnode/skiff/shim/scheme"
)

// Kind describes one served resource. Only the fields up to NewList are
// required.
type Kind struct {
	Group      string // API group, "" for core
	Version    string // served version, e.g. "v1"
	Resource   string // plural resource, e.g. "pods"
	Singular   string // e.g. "pod"
	Namespaced bool
	New        func() runtime.Object
	NewList    func() runtime.Object

	// ShortNames are kubectl's abbreviations (discovery).
	ShortNames []string
	// Categories such as "all" (discovery).
	Categories []string
	// Status: the object's .status is written only through the status
	// subresource, and .spec (and metadata) only through the main resource.
	Status bool
	// ValidateName checks metadata.name; default NameIsDNSSubdomain.
	ValidateName apivalidation.ValidateNameFunc
	// Validate checks the kind's own fields on create and update.
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateCreate checks what only a new object must satisfy (after
	// Validate).
	ValidateCreate func(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks what may not change on update (after Validate).
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// PrepareForCreate clears or sets fields the server owns.
	PrepareForCreate func(obj runtime.Object)
	// PrepareForUpdate adjusts an update of the main resource (after the
	// status was reset), e.g. bumps metadata.generation on spec changes.
	PrepareForUpdate func(obj, old runtime.Object)
	// PrepareForStatusUpdate adjusts an update through the status
	// subresource, after the spec and owner references were kept (pods:
	// status fields a client may not clear).
	PrepareForStatusUpdate func(obj, old runtime.Object)
	// ValidateStatusUpdate checks an update through the status subresource,
	// after the metadata update checks.
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList
	// WarningsOnCreate and WarningsOnUpdate give the warnings of a valid
	// create or update of the main resource (the Warning headers kubectl
	// prints); nil: none.
	WarningsOnCreate func(obj runtime.Object) []string
	WarningsOnUpdate func(obj, old runtime.Object) []string
	// OrphanByDefault: a delete request of this version without a
	// propagation policy orphans the object's dependents (batch/v1 Jobs,
	// as upstream for compatibility); otherwise the garbage collector
	// deletes them in the background.
	OrphanByDefault bool
	// UpdateSubresources are update-only subresources by name (pods:
	// "resize"), each served by an UpdateREST over the kind's storage.
	UpdateSubresources map[string]*UpdateSubresource
	// Scale, if set, adds the scale subresource (autoscaling/v1 Scale).
	Scale *ScaleFuncs
	// Fields returns the kind's selectable fields beyond metadata.name and
	// metadata.namespace (see scheme.FieldLabels).
	Fields func(obj runtime.Object) fields.Set
	// AllowCreateOnUpdate lets PUT create a missing object.
	AllowCreateOnUpdate bool
	// TTL in seconds after which etcd drops the object (events); 0: none.
	TTL uint64
	// GracefulDelete decides a deletion's grace period (pods); nil: none.
	GracefulDelete func(obj runtime.Object, options *metav1.DeleteOptions) bool
	// TriggerField names a field whose value the watch cache indexes
	// watchers by (the pods' spec.nodeName), with its getter.
	TriggerField string
	Trigger      func(obj runtime.Object) string
	// Table gives `kubectl get` its columns (shim/printers); nil: NAME and
	// CREATED AT.
	Table rest.TableConvertor
	// StoreHooks, if set, sets store-level hooks (BeginCreate, BeginUpdate,
	// AfterDelete) on the kind's completed Stores: main's, and status's
	// for kinds with Status (else nil), which starts as a copy of main's
	// without them. Upstream's Services allocate and release their
	// cluster IPs and node ports this way.
	StoreHooks func(main, status *genericregistry.Store)
}

// UpdateSubresource describes an update-only subresource: get, update and
// patch of the whole object, of which an update keeps only what
// PrepareForUpdate takes from the request (upstream's podResizeStrategy).
// Create on update is never allowed. Both hooks are required.
type UpdateSubresource struct {
	// PrepareForUpdate makes obj old plus the changes the subresource
	// accepts, and bumps metadata.generation if it changes the spec
	// (rest.BeforeUpdate has reset obj's generation to old's).
	PrepareForUpdate func(obj, old runtime.Object)
	// ValidateUpdate checks the update after PrepareForUpdate; it runs
	// after the metadata update checks and the kind's Validate.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
}

// UpdateStrategy returns the update strategy of the endpoint subresource
// of k: "" for the main resource, "status" (kinds with Status) or the
// name of one of its UpdateSubresources; nil for any other. The Stores
// use these strategies; tests may run rest.BeforeUpdate with them.
func (k *Kind) UpdateStrategy(subresource string) rest.RESTUpdateStrategy {
	switch {
	case subresource == "":
		return newStrategy(k, false)
	case subresource == "status" && k.Status:
		return newStrategy(k, true)
	case k.UpdateSubresources[subresource] != nil:
		s := newStrategy(k, false)
		s.sub = k.UpdateSubresources[subresource]
		return s
	}
	return nil
}

// GetAttrs returns the labels and selectable fields of obj.
func (k *Kind) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	meta, err := objectMeta(obj)
	if err != nil {
		return nil, nil, err
	}
	var set fields.Set
	if k.Fields != nil {
		set = k.Fields(obj)
	} else {
		set = fields.Set{}
	}
	set["metadata.name"] = meta.GetName()
	if k.Namespaced {
		set["metadata.namespace"] = meta.GetNamespace()
	}
	return labels.Set(meta.GetLabels()), set, nil
}

// predicate is the Store's PredicateFunc.
func (k *Kind) predicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	p := storage.SelectionPredicate{Label: label, Field: field, GetAttrs: k.GetAttrs}
	if k.TriggerField != "" {
		p.IndexFields = []string{k.TriggerField}
	}
	return p
}

// strategy implements the create, update and delete strategies of a Kind;
// statusOnly is the status subresource's, sub an update subresource's.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kind       *Kind
	statusOnly bool
	sub        *UpdateSubresource
}

func newStrategy(k *Kind, statusOnly bool) *strategy {
	return &strategy{ObjectTyper: scheme.Scheme, NameGenerator: names.SimpleNameGenerator, kind: k, statusOnly: statusOnly}
}

func (s *strategy) NamespaceScoped() bool { return s.kind.Namespaced }

func (s *strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if s.kind.Status {
		clearField(obj, "Status")
	}
	if s.kind.PrepareForCreate != nil {
		s.kind.PrepareForCreate(obj)
	}
}

func (s *strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	if s.sub != nil {
		s.sub.PrepareForUpdate(obj, old)
		return
	}
	if !s.kind.Status {
		if s.kind.PrepareForUpdate != nil {
			s.kind.PrepareForUpdate(obj, old)
		}
		return
	}
	if s.statusOnly {
		// As upstream's status strategies (pods, nodes, namespaces): the
		// spec, and the owner references old kubelets corrupted, are kept.
		copyField(obj, old, "Spec")
		meta, _ := objectMeta(obj)
		oldMeta, _ := objectMeta(old)
		if meta != nil && oldMeta != nil {
			meta.SetOwnerReferences(oldMeta.GetOwnerReferences())
		}
		if s.kind.PrepareForStatusUpdate != nil {
			s.kind.PrepareForStatusUpdate(obj, old)
		}
		return
	}
	copyField(obj, old, "Status")
	if s.kind.PrepareForUpdate != nil {
		s.kind.PrepareForUpdate(obj, old)
	}
}

func (s *strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	errs := s.validate(obj)
	if s.kind.ValidateCreate != nil {
		errs = append(errs, s.kind.ValidateCreate(obj)...)
	}
	return errs
}

// validate is what creates and updates of the main resource check: the
// object's metadata and the kind's Validate.
func (s *strategy) validate(obj runtime.Object) field.ErrorList {
	meta, err := objectMeta(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	nameFn := s.kind.ValidateName
	if nameFn == nil {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	errs := apivalidation.ValidateObjectMetaAccessor(meta, s.kind.Namespaced, nameFn, field.NewPath("metadata"))
	if s.kind.Validate != nil {
		errs = append(errs, s.kind.Validate(obj)...)
	}
	return errs
}

func (s *strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	meta, err := objectMeta(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	oldMeta, err := objectMeta(old)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(meta, oldMeta, field.NewPath("metadata"))
	if s.statusOnly {
		if s.kind.ValidateStatusUpdate != nil {
			errs = append(errs, s.kind.ValidateStatusUpdate(obj, old)...)
		}
		return errs
	}
	errs = append(errs, s.validate(obj)...)
	switch {
	case s.sub != nil:
		errs = append(errs, s.sub.ValidateUpdate(obj, old)...)
	case s.kind.ValidateUpdate != nil:
		errs = append(errs, s.kind.ValidateUpdate(obj, old)...)
	}
	return errs
}

func (s *strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	if s.kind.WarningsOnCreate == nil {
		return nil
	}
	return s.kind.WarningsOnCreate(obj)
}

func (s *strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	if s.kind.WarningsOnUpdate == nil || s.statusOnly || s.sub != nil {
		return nil
	}
	return s.kind.WarningsOnUpdate(obj, old)
}

// DefaultGarbageCollectionPolicy implements
// rest.GarbageCollectionDeleteStrategy: Kind.OrphanByDefault.
func (s *strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	if s.kind.OrphanByDefault {
		return rest.OrphanDependents
	}
	return rest.DeleteDependents
}

func (s *strategy) Canonicalize(runtime.Object) {}

func (s *strategy) AllowCreateOnUpdate(context.Context) bool {
	return s.kind.AllowCreateOnUpdate && !s.statusOnly && s.sub == nil
}

func (s *strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// GetResetFields tells server-side apply which fields each endpoint resets,
// so that managedFields do not claim them (as upstream's strategies).
func (s *strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if !s.kind.Status {
		return nil
	}
	reset := fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	if s.statusOnly {
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "deletionTimestamp"))
	}
	gv := s.kind.Group + "/" + s.kind.Version
	if s.kind.Group == "" {
		gv = s.kind.Version
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gv): reset}
}

// clearField sets obj's struct field name to its zero value.
func clearField(obj runtime.Object, name string) {
	f := reflect.ValueOf(obj).Elem().FieldByName(name)
	if f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

// copyField sets obj's struct field name to a copy of old's.
func copyField(obj, old runtime.Object, name string) {
	dst := reflect.ValueOf(obj).Elem().FieldByName(name)
	src := reflect.ValueOf(old.DeepCopyObject()).Elem().FieldByName(name)
	if dst.IsValid() && src.IsValid() && dst.CanSet() {
		dst.Set(src)
	}
}
