package podspec

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// validateAffinity checks spec.affinity's node affinity, which the node
// enforces at admission (required terms) as the kubelet does: at least one
// term, and terms that parse (operators, values, label keys,
// metadata.name as the only field), with upstream's scheduler helpers'
// messages. Pod (anti-)affinity is the scheduler's alone; the node ignores
// it, as the kubelet does.
func validateAffinity(a *v1.Affinity, path *field.Path) field.ErrorList {
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	var errs field.ErrorList
	path = path.Child("nodeAffinity")
	if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		reqPath := path.Child("requiredDuringSchedulingIgnoredDuringExecution")
		if len(req.NodeSelectorTerms) == 0 {
			errs = append(errs, field.Required(reqPath.Child("nodeSelectorTerms"), "must have at least one node selector term"))
		} else if _, err := nodeaffinity.NewNodeSelector(req, field.WithPath(reqPath)); err != nil {
			errs = append(errs, fieldErrors(err, reqPath)...)
		}
	}
	if pref := a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(pref) > 0 {
		prefPath := path.Child("preferredDuringSchedulingIgnoredDuringExecution")
		if _, err := nodeaffinity.NewPreferredSchedulingTerms(pref, field.WithPath(prefPath)); err != nil {
			errs = append(errs, fieldErrors(err, prefPath)...)
		}
	}
	return errs
}

// fieldErrors unpacks the field errors of err (an aggregate of them, as
// the nodeaffinity helpers return); anything else is Invalid at path.
func fieldErrors(err error, path *field.Path) field.ErrorList {
	var agg interface{ Errors() []error }
	if errors.As(err, &agg) {
		var out field.ErrorList
		for _, e := range agg.Errors() {
			out = append(out, fieldErrors(e, path)...)
		}
		return out
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		return field.ErrorList{fe}
	}
	return field.ErrorList{field.Invalid(path, "", err.Error())}
}
