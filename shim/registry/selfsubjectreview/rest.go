// Package selfsubjectreview serves authentication.k8s.io/v1
// SelfSubjectReview (`kubectl auth whoami`): upstream's REST
// (pkg/registry/authentication/selfsubjectreview/rest.go, 1.34), which
// answers with the requester's identity and stores nothing.
package selfsubjectreview

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST creates SelfSubjectReviews.
type REST struct {
	// Now is the clock of creationTimestamp; nil: time.Now.
	Now func() time.Time
}

var (
	_ rest.Creater              = (*REST)(nil) //nolint:misspell // the API's spelling
	_ rest.Scoper               = (*REST)(nil)
	_ rest.SingularNameProvider = (*REST)(nil)
	_ rest.Storage              = (*REST)(nil)
)

// NamespaceScoped implements rest.Scoper.
func (r *REST) NamespaceScoped() bool { return false }

// New implements rest.Storage.
func (r *REST) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *REST) Destroy() {}

// GetSingularName implements rest.SingularNameProvider.
func (r *REST) GetSingularName() string { return "selfsubjectreview" }

// Create creates a review (rest.Creater's method): status.userInfo is the
// requester.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectReview: %T", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	extra := make(map[string]authenticationv1.ExtraValue, len(u.GetExtra()))
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now())},
		Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
		}},
	}, nil
}
