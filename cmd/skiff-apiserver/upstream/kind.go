// Package upstream serves kinds through the strategies of upstream's
// registries (k8s.io/kubernetes/pkg/registry/...) and runs upstream's
// controllers (pkg/controller/...) in skiff-apiserver, as decision 111's
// (c) chose: the shim's store keeps one Go type per kind (shim/scheme),
// and each hook converts to upstream's internal type, calls upstream's
// strategy and converts back, so that preparation, validation, warnings
// and kubectl's columns are upstream's own.
package upstream

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// strategy is what an upstream registry's strategy offers on internal
// objects.
type strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// converter converts between the served external types and upstream's
// internal ones through a scheme holding both and upstream's generated
// conversions; printers are upstream's kubectl columns of every kind, on
// internal objects.
type converter struct {
	scheme   *runtime.Scheme
	printers rest.TableConvertor
}

// newPrinters returns upstream's table printers of every kind.
func newPrinters() rest.TableConvertor {
	return printerstorage.TableConvertor{TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers)}
}

// internal returns obj (external) converted to its internal type.
func (c converter) internal(obj runtime.Object) (runtime.Object, error) {
	kinds, _, err := c.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	out, err := c.scheme.New(kinds[0].GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return nil, err
	}
	if err := c.scheme.Convert(obj, out, nil); err != nil {
		return nil, fmt.Errorf("convert %s to internal: %w", kinds[0].Kind, err)
	}
	return out, nil
}

// setExternal overwrites obj (external) with in (internal) converted,
// keeping obj's type metadata.
func (c converter) setExternal(in, obj runtime.Object) error {
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if err := c.scheme.Convert(in, fresh, nil); err != nil {
		return err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// prepare converts obj, runs f on the internal object and writes the
// result back; a conversion failure leaves obj as it was (validation,
// which converts again, reports it).
func (c converter) prepare(obj runtime.Object, f func(in runtime.Object)) {
	in, err := c.internal(obj)
	if err != nil {
		return
	}
	f(in)
	_ = c.setExternal(in, obj)
}

// validate converts obj and runs f on it; a conversion failure is an
// internal error.
func (c converter) validate(obj runtime.Object, f func(in runtime.Object) field.ErrorList) field.ErrorList {
	in, err := c.internal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return f(in)
}

// validateUpdate is validate for obj and old.
func (c converter) validateUpdate(obj, old runtime.Object, f func(in, oldIn runtime.Object) field.ErrorList) field.ErrorList {
	return c.validate(obj, func(in runtime.Object) field.ErrorList {
		return c.validate(old, func(oldIn runtime.Object) field.ErrorList { return f(in, oldIn) })
	})
}

// withStrategy sets k's preparation, validation and warning hooks to
// main's (the main resource) and status's (the status subresource; nil:
// none), and k's Table to upstream's printers (c). Upstream's strategies take
// a context only for logging and request information: the hooks, which
// have none, give them context.Background().
func (c converter) withStrategy(k *generic.Kind, main, status strategy) *generic.Kind {
	ctx := context.Background()
	k.PrepareForCreate = func(obj runtime.Object) {
		c.prepare(obj, func(in runtime.Object) { main.PrepareForCreate(ctx, in) })
	}
	k.ValidateCreate = func(obj runtime.Object) field.ErrorList {
		return c.validate(obj, func(in runtime.Object) field.ErrorList { return main.Validate(ctx, in) })
	}
	k.WarningsOnCreate = func(obj runtime.Object) []string {
		in, err := c.internal(obj)
		if err != nil {
			return nil
		}
		return main.WarningsOnCreate(ctx, in)
	}
	k.PrepareForUpdate = func(obj, old runtime.Object) {
		oldIn, err := c.internal(old)
		if err != nil {
			return
		}
		c.prepare(obj, func(in runtime.Object) { main.PrepareForUpdate(ctx, in, oldIn) })
	}
	k.ValidateUpdate = func(obj, old runtime.Object) field.ErrorList {
		return c.validateUpdate(obj, old, func(in, oldIn runtime.Object) field.ErrorList { return main.ValidateUpdate(ctx, in, oldIn) })
	}
	k.WarningsOnUpdate = func(obj, old runtime.Object) []string {
		in, err := c.internal(obj)
		oldIn, oldErr := c.internal(old)
		if err != nil || oldErr != nil {
			return nil
		}
		return main.WarningsOnUpdate(ctx, in, oldIn)
	}
	if status != nil {
		k.PrepareForStatusUpdate = func(obj, old runtime.Object) {
			oldIn, err := c.internal(old)
			if err != nil {
				return
			}
			c.prepare(obj, func(in runtime.Object) { status.PrepareForUpdate(ctx, in, oldIn) })
		}
		k.ValidateStatusUpdate = func(obj, old runtime.Object) field.ErrorList {
			return c.validateUpdate(obj, old, func(in, oldIn runtime.Object) field.ErrorList { return status.ValidateUpdate(ctx, in, oldIn) })
		}
	}
	k.Table = c
	return k
}

// ConvertToTable implements rest.TableConvertor with upstream's printers:
// obj, an object or a list, is converted to its internal type first.
func (c converter) ConvertToTable(ctx context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	in, err := c.internal(obj)
	if err != nil {
		return nil, err
	}
	return c.printers.ConvertToTable(ctx, in, opts)
}
