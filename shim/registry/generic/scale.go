package generic

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ScaleFuncs read and write a scalable kind's replica counts.
type ScaleFuncs struct {
	// Replicas returns spec.replicas.
	Replicas func(obj runtime.Object) int32
	// SetReplicas sets spec.replicas.
	SetReplicas func(obj runtime.Object, n int32)
	// StatusReplicas returns status.replicas.
	StatusReplicas func(obj runtime.Object) int32
	// Selector returns spec.selector.
	Selector func(obj runtime.Object) *metav1.LabelSelector
}

// ScaleREST is the scale subresource: an autoscaling/v1 Scale view of the
// object (upstream's pkg/registry/apps/deployment/storage/storage.go
// ScaleREST). An update changes only spec.replicas, through the main
// Store (so the main strategy bumps the generation).
type ScaleREST struct {
	store *genericregistry.Store
	funcs *ScaleFuncs
	gr    schema.GroupResource
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// GroupVersionKind implements rest.GroupVersionKindProvider: the
// subresource's kind is autoscaling/v1 Scale in every group version.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// New implements rest.Storage.
func (r *ScaleREST) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy implements rest.Storage; the main Store owns the storage.
func (r *ScaleREST) Destroy() {}

// Get implements rest.Getter.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return r.toScale(obj)
}

// Update implements rest.Updater: the object's replicas from the Scale
// the request makes of the current one. A Scale with a resourceVersion is
// a precondition on the object's.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	info := &scaleUpdatedObjectInfo{r: r, name: name, req: objInfo}
	obj, _, err := r.store.Update(ctx, name, info, r.scaleCreateValidation(createValidation),
		r.scaleUpdateValidation(updateValidation), false, options)
	if err != nil {
		return nil, false, err
	}
	scale, err := r.toScale(obj)
	return scale, false, err
}

// ConvertToTable implements rest.TableConvertor.
func (r *ScaleREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(r.gr).ConvertToTable(ctx, object, tableOptions)
}

// toScale is upstream's scaleFromDeployment for any scalable kind.
func (r *ScaleREST) toScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	meta, err := objectMeta(obj)
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(r.funcs.Selector(obj))
	if err != nil {
		return nil, fmt.Errorf("selector of %s: %w", meta.GetName(), err)
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: meta.GetName(), Namespace: meta.GetNamespace(), UID: meta.GetUID(),
			ResourceVersion: meta.GetResourceVersion(), CreationTimestamp: meta.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: r.funcs.Replicas(obj)},
		Status: autoscalingv1.ScaleStatus{Replicas: r.funcs.StatusReplicas(obj), Selector: selector.String()},
	}, nil
}

// scaleCreateValidation never runs: the scale subresource does not create.
func (r *ScaleREST) scaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		scale, err := r.toScale(obj)
		if err != nil {
			return err
		}
		return f(ctx, scale)
	}
}

// scaleUpdateValidation hands admission the Scales, as upstream does.
func (r *ScaleREST) scaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		newScale, err := r.toScale(obj)
		if err != nil {
			return err
		}
		oldScale, err := r.toScale(old)
		if err != nil {
			return err
		}
		return f(ctx, newScale, oldScale)
	}
}

// scaleUpdatedObjectInfo turns the request's Scale into the updated object.
type scaleUpdatedObjectInfo struct {
	r    *ScaleREST
	name string
	req  rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions { return i.req.Preconditions() }

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj := oldObj.DeepCopyObject()
	if obj == nil {
		return nil, apierrors.NewNotFound(i.r.gr, i.name)
	}
	oldScale, err := i.r.toScale(obj)
	if err != nil {
		return nil, err
	}
	updated, err := i.req.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := updated.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", updated))
	}
	if scale.Spec.Replicas < 0 {
		errs := field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")}
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), scale.Name, errs)
	}
	meta, err := objectMeta(obj)
	if err != nil {
		return nil, err
	}
	if scale.ResourceVersion != "" {
		meta.SetResourceVersion(scale.ResourceVersion)
	}
	i.r.funcs.SetReplicas(obj, scale.Spec.Replicas)
	return obj, nil
}
