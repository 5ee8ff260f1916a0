package accessreview

import (
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// This file is upstream's pkg/registry/authorization/util/helpers.go
// (Kubernetes 1.34) over the k8s.io/api types. The AuthorizeWithSelectors
// gate is GA and locked on in 1.34, so selectors are always honoured.

// ResourceAttributesFrom are the authorizer attributes of u doing in: a
// resource request, version "*" when empty, with in's label and field
// selectors parsed (a parse error kept in the attributes, see
// BuildEvaluationError).
func ResourceAttributesFrom(u user.Info, in authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	ret := authorizer.AttributesRecord{
		User:            u,
		Verb:            in.Verb,
		Namespace:       in.Namespace,
		APIGroup:        in.Group,
		APIVersion:      matchAllVersionIfEmpty(in.Version),
		Resource:        in.Resource,
		Subresource:     in.Subresource,
		Name:            in.Name,
		ResourceRequest: true,
	}
	if s := in.LabelSelector; s != nil {
		if len(s.RawSelector) > 0 {
			if sel, err := labels.Parse(s.RawSelector); err != nil {
				ret.LabelSelectorRequirements, ret.LabelSelectorParsingErr = nil, err
			} else {
				ret.LabelSelectorRequirements, _ = sel.Requirements()
				ret.LabelSelectorParsingErr = nil
			}
		}
		if len(s.Requirements) > 0 {
			ret.LabelSelectorRequirements, ret.LabelSelectorParsingErr = labelRequirements(s.Requirements)
		}
	}
	if s := in.FieldSelector; s != nil {
		if len(s.RawSelector) > 0 {
			if sel, err := fields.ParseSelector(s.RawSelector); err != nil {
				ret.FieldSelectorRequirements, ret.FieldSelectorParsingErr = nil, err
			} else {
				ret.FieldSelectorRequirements, ret.FieldSelectorParsingErr = sel.Requirements(), nil
			}
		}
		if len(s.Requirements) > 0 {
			ret.FieldSelectorRequirements, ret.FieldSelectorParsingErr = fieldRequirements(s.Requirements)
		}
	}
	return ret
}

var labelSelectorOps = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}

// labelRequirements is upstream's labelSelectorAsSelector: the valid
// requirements (nil if none) and the errors of those left out (leaving
// one out only widens the check: requirements are ANDed).
func labelRequirements(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	reqs := make([]labels.Requirement, 0, len(in))
	var errs []error
	for _, expr := range in {
		op, ok := labelSelectorOps[expr.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a valid label selector operator", expr.Operator))
			continue
		}
		values := expr.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(expr.Key, op, values)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reqs = append(reqs, *req)
	}
	if len(reqs) == 0 {
		reqs = nil
	}
	return labels.Requirements(reqs), utilerrors.NewAggregate(errs)
}

// fieldRequirements is upstream's fieldSelectorAsSelector: In and NotIn
// with exactly one value become = and !=; anything else is left out with
// an error.
func fieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	reqs := make([]fields.Requirement, 0, len(in))
	var errs []error
	for _, expr := range in {
		if len(expr.Values) > 1 {
			errs = append(errs, errors.New("fieldSelectors do not yet support multiple values"))
			continue
		}
		var op selection.Operator
		switch expr.Operator {
		case metav1.FieldSelectorOpIn:
			if len(expr.Values) != 1 {
				errs = append(errs, errors.New("fieldSelectors in must have one value"))
				continue
			}
			op = selection.Equals // as a parsed field selector
		case metav1.FieldSelectorOpNotIn:
			if len(expr.Values) != 1 {
				errs = append(errs, errors.New("fieldSelectors not in must have one value"))
				continue
			}
			op = selection.NotEquals
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support %v", expr.Operator))
			continue
		default:
			errs = append(errs, fmt.Errorf("%q is not a valid field selector operator", expr.Operator))
			continue
		}
		reqs = append(reqs, fields.Requirement{Field: expr.Key, Operator: op, Value: expr.Values[0]})
	}
	if len(reqs) == 0 {
		reqs = nil
	}
	return fields.Requirements(reqs), utilerrors.NewAggregate(errs)
}

// NonResourceAttributesFrom are the authorizer attributes of u doing in:
// a non-resource request.
func NonResourceAttributesFrom(u user.Info, in authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, ResourceRequest: false, Path: in.Path, Verb: in.Verb}
}

// AuthorizationAttributesFrom are the attributes a SubjectAccessReview's
// spec asks about: its user, groups, UID and extra doing its resource or
// (if no resourceAttributes) non-resource attributes. spec must have
// passed ValidateSubjectAccessReviewSpec.
func AuthorizationAttributesFrom(spec authorizationv1.SubjectAccessReviewSpec) authorizer.AttributesRecord {
	u := &user.DefaultInfo{Name: spec.User, Groups: spec.Groups, UID: spec.UID, Extra: userExtra(spec.Extra)}
	if spec.ResourceAttributes != nil {
		return ResourceAttributesFrom(u, *spec.ResourceAttributes)
	}
	return NonResourceAttributesFrom(u, *spec.NonResourceAttributes)
}

func userExtra(extra map[string]authorizationv1.ExtraValue) map[string][]string {
	if extra == nil {
		return nil
	}
	ret := make(map[string][]string, len(extra))
	for k, v := range extra {
		ret[k] = v
	}
	return ret
}

func matchAllVersionIfEmpty(version string) string {
	if version == "" {
		return "*"
	}
	return version
}

// BuildEvaluationError is status.evaluationError: the authorizer's error
// and a note for each selector that could not be (fully) parsed, joined
// by "; ".
func BuildEvaluationError(evaluationError error, attrs authorizer.AttributesRecord) string {
	var msgs []string
	if evaluationError != nil {
		msgs = append(msgs, evaluationError.Error())
	}
	if reqs, err := attrs.GetFieldSelector(); err != nil {
		msgs = append(msgs, "spec.resourceAttributes.fieldSelector "+ignored(len(reqs) > 0))
	}
	if reqs, err := attrs.GetLabelSelector(); err != nil {
		msgs = append(msgs, "spec.resourceAttributes.labelSelector "+ignored(len(reqs) > 0))
	}
	return strings.Join(msgs, "; ")
}

func ignored(partially bool) string {
	if partially {
		return "partially ignored due to parse error"
	}
	return "ignored due to parse error"
}
