// Package accessreview serves authorization.k8s.io/v1
// SubjectAccessReview, SelfSubjectAccessReview and
// LocalSubjectAccessReview: whether a user may do something, answered by
// the API server's own authorizer; nothing is stored. Adapted from
// upstream's pkg/registry/authorization/{subjectaccessreview,
// selfsubjectaccessreview,localsubjectaccessreview}/rest.go, util/helpers.go
// and pkg/apis/authorization/validation (Kubernetes 1.34) over the
// k8s.io/api types.
package accessreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// review is what the three kinds share: the authorizer and rest.Storage's
// boilerplate.
type review struct {
	// Authorizer answers the reviews.
	Authorizer authorizer.Authorizer
}

// Destroy implements rest.Storage; there is nothing to release.
func (review) Destroy() {}

// decide asks the authorizer about attrs: status.allowed and denied from
// its decision, its reason, and its error plus selector parse errors in
// evaluationError, as upstream.
func (r review) decide(ctx context.Context, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := r.Authorizer.Authorize(ctx, attrs)
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authorizer.DecisionAllow,
		Denied:          decision == authorizer.DecisionDeny,
		Reason:          reason,
		EvaluationError: BuildEvaluationError(err, attrs),
	}
}

// invalid is the 422 of a review that failed validation. The kind is
// named, where upstream names the decoded object's (empty) kind.
func invalid(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(kind).GroupKind(), "", errs)
}

func validate(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc) error {
	if createValidation == nil {
		return nil
	}
	return createValidation(ctx, obj.DeepCopyObject())
}

// SubjectAccessReviewREST creates SubjectAccessReviews (cluster-scoped):
// may spec.user (groups, uid, extra) do the spec's attributes?
type SubjectAccessReviewREST struct{ review }

// SelfSubjectAccessReviewREST creates SelfSubjectAccessReviews
// (cluster-scoped): may the requester do the spec's attributes?
type SelfSubjectAccessReviewREST struct{ review }

// LocalSubjectAccessReviewREST creates LocalSubjectAccessReviews: a
// SubjectAccessReview in the request's namespace.
type LocalSubjectAccessReviewREST struct{ review }

// NewSubjectAccessReviewREST answers with az.
func NewSubjectAccessReviewREST(az authorizer.Authorizer) *SubjectAccessReviewREST {
	return &SubjectAccessReviewREST{review{az}}
}

// NewSelfSubjectAccessReviewREST answers with az.
func NewSelfSubjectAccessReviewREST(az authorizer.Authorizer) *SelfSubjectAccessReviewREST {
	return &SelfSubjectAccessReviewREST{review{az}}
}

// NewLocalSubjectAccessReviewREST answers with az.
func NewLocalSubjectAccessReviewREST(az authorizer.Authorizer) *LocalSubjectAccessReviewREST {
	return &LocalSubjectAccessReviewREST{review{az}}
}

var (
	_ rest.Creater              = (*SubjectAccessReviewREST)(nil)      //nolint:misspell // the API's spelling
	_ rest.Creater              = (*SelfSubjectAccessReviewREST)(nil)  //nolint:misspell // the API's spelling
	_ rest.Creater              = (*LocalSubjectAccessReviewREST)(nil) //nolint:misspell // the API's spelling
	_ rest.SingularNameProvider = (*SubjectAccessReviewREST)(nil)
	_ rest.SingularNameProvider = (*SelfSubjectAccessReviewREST)(nil)
	_ rest.SingularNameProvider = (*LocalSubjectAccessReviewREST)(nil)
)

// NamespaceScoped implements rest.Scoper.
func (*SubjectAccessReviewREST) NamespaceScoped() bool { return false }

// New implements rest.Storage.
func (*SubjectAccessReviewREST) New() runtime.Object { return &authorizationv1.SubjectAccessReview{} }

// GetSingularName implements rest.SingularNameProvider.
func (*SubjectAccessReviewREST) GetSingularName() string { return "subjectaccessreview" }

// Create answers the review (rest.Creater's method): 422 if invalid
// (ValidateSubjectAccessReview), else the review with its status.
func (r *SubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SubjectAccessReview: %T", obj))
	}
	if errs := ValidateSubjectAccessReview(sar); len(errs) > 0 {
		return nil, invalid("SubjectAccessReview", errs)
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	sar.Status = r.decide(ctx, AuthorizationAttributesFrom(sar.Spec))
	return sar, nil
}

// NamespaceScoped implements rest.Scoper.
func (*SelfSubjectAccessReviewREST) NamespaceScoped() bool { return false }

// New implements rest.Storage.
func (*SelfSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}

// GetSingularName implements rest.SingularNameProvider.
func (*SelfSubjectAccessReviewREST) GetSingularName() string { return "selfsubjectaccessreview" }

// Create answers the review for the requester (rest.Creater's method):
// 422 if invalid, 400 without a user in ctx.
func (r *SelfSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	ssar, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	if errs := ValidateSelfSubjectAccessReview(ssar); len(errs) > 0 {
		return nil, invalid("SelfSubjectAccessReview", errs)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	var attrs authorizer.AttributesRecord
	if ssar.Spec.ResourceAttributes != nil {
		attrs = ResourceAttributesFrom(u, *ssar.Spec.ResourceAttributes)
	} else {
		attrs = NonResourceAttributesFrom(u, *ssar.Spec.NonResourceAttributes)
	}
	ssar.Status = r.decide(ctx, attrs)
	return ssar, nil
}

// NamespaceScoped implements rest.Scoper.
func (*LocalSubjectAccessReviewREST) NamespaceScoped() bool { return true }

// New implements rest.Storage.
func (*LocalSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.LocalSubjectAccessReview{}
}

// GetSingularName implements rest.SingularNameProvider.
func (*LocalSubjectAccessReviewREST) GetSingularName() string { return "localsubjectaccessreview" }

// Create answers the review (rest.Creater's method): 422 if invalid, 400
// unless metadata.namespace is the request's namespace.
func (r *LocalSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	lsar, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %T", obj))
	}
	if errs := ValidateLocalSubjectAccessReview(lsar); len(errs) > 0 {
		return nil, invalid("LocalSubjectAccessReview", errs)
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if ns == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is required on this type: %v", ns))
	}
	if ns != lsar.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", ns))
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	lsar.Status = r.decide(ctx, AuthorizationAttributesFrom(lsar.Spec))
	return lsar, nil
}
