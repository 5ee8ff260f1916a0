package controllerref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resolve returns the owner ref names, as upstream's resolveControllerRef:
// the object get returns for ref's name if ref is of kind gvk and the
// object has ref's UID; else the zero T (nil for the listers' pointers).
// get is typically a namespaced lister's Get.
func Resolve[T metav1.Object](ref *metav1.OwnerReference, gvk schema.GroupVersionKind, get func(name string) (T, error)) T {
	var zero T
	if ref.Kind != gvk.Kind || ref.APIVersion != gvk.GroupVersion().String() {
		return zero
	}
	obj, err := get(ref.Name)
	if err != nil || obj.GetUID() != ref.UID {
		return zero
	}
	return obj
}

// Selecting returns the owners, in order, whose label selector (selector
// of the owner) matches set; an invalid or empty selector matches nothing,
// as upstream's controllers treat them when they look for the owners of
// an object.
func Selecting[T any](owners []T, selector func(T) *metav1.LabelSelector, set labels.Set) []T {
	var out []T
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selector(o))
		if err == nil && !sel.Empty() && sel.Matches(set) {
			out = append(out, o)
		}
	}
	return out
}
