package accessreview

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file is upstream's pkg/apis/authorization/validation/validation.go
// (Kubernetes 1.34) over the k8s.io/api types, messages and field paths
// unchanged.

// ValidateSubjectAccessReviewSpec: exactly one of resourceAttributes and
// nonResourceAttributes, a user or a group, valid selectors.
func ValidateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec.resourceAttributes"))...)
}

// ValidateSelfSubjectAccessReviewSpec: exactly one of resourceAttributes
// and nonResourceAttributes, valid selectors.
func ValidateSelfSubjectAccessReviewSpec(spec authorizationv1.SelfSubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec.resourceAttributes"))...)
}

func validateAttributesChoice(r *authorizationv1.ResourceAttributes, nr *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if r != nil && nr != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceAttributes"), nr, `cannot be specified in combination with resourceAttributes`))
	}
	if r == nil && nr == nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("resourceAttributes"), nr, `exactly one of nonResourceAttributes or resourceAttributes must be specified`))
	}
	return allErrs
}

// ValidateSubjectAccessReview: a valid spec and empty metadata.
func ValidateSubjectAccessReview(sar *authorizationv1.SubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateSelfSubjectAccessReview: a valid spec and empty metadata.
func ValidateSelfSubjectAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSelfSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateLocalSubjectAccessReview: a valid spec, metadata empty but for
// the namespace, which resourceAttributes.namespace must match; no
// nonResourceAttributes.
func ValidateLocalSubjectAccessReview(sar *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	allErrs = append(allErrs, validateEmptyMeta(sar.ObjectMeta, true)...)
	if sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Namespace != sar.Namespace {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), sar.Spec.ResourceAttributes.Namespace, `must match metadata.namespace`))
	}
	if sar.Spec.NonResourceAttributes != nil {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), sar.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	return allErrs
}

// validateEmptyMeta: meta is empty but for managedFields (and the
// namespace when namespaced).
func validateEmptyMeta(meta metav1.ObjectMeta, namespaced bool) field.ErrorList {
	shallow := meta
	shallow.ManagedFields = nil
	msg := `must be empty`
	if namespaced {
		shallow.Namespace = ""
		msg = `must be empty except for namespace`
	}
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, shallow) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, msg)}
	}
	return nil
}

func validateResourceAttributes(r *authorizationv1.ResourceAttributes, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if s := r.FieldSelector; s != nil {
		p := fldPath.Child("fieldSelector")
		allErrs = append(allErrs, validateSelectorChoice(s.RawSelector, len(s.Requirements), p)...)
		// Unknown operators are allowed: newer clients may know more.
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, req := range s.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateFieldSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
		}
	}
	if s := r.LabelSelector; s != nil {
		p := fldPath.Child("labelSelector")
		allErrs = append(allErrs, validateSelectorChoice(s.RawSelector, len(s.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, req := range s.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
		}
	}
	return allErrs
}

// validateSelectorChoice: exactly one of rawSelector and requirements.
func validateSelectorChoice(raw string, requirements int, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if raw != "" && requirements > 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("rawSelector"), raw, "may not specified at the same time as requirements"))
	}
	if raw == "" && requirements == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", fldPath)))
	}
	return allErrs
}
