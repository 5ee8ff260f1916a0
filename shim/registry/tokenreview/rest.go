// Package tokenreview serves authentication.k8s.io/v1 TokenReview: the
// authenticated identity of a bearer token, for webhook token
// authentication (a kubelet's --authentication-token-webhook). Adapted
// from upstream's REST (pkg/registry/authentication/tokenreview/storage.go,
// Kubernetes 1.34) over the k8s.io/api types; nothing is stored.
package tokenreview

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
)

// errBadAudiences is upstream's answer (500) when the authenticator
// returns none of the audiences asked for.
var errBadAudiences = apierrors.NewInternalError(errors.New("error validating audiences"))

// REST creates TokenReviews.
type REST struct {
	// Authenticator authenticates a request that carries only the
	// reviewed token as its bearer token: the API server's own request
	// authenticator, as upstream. nil: every review is returned as sent.
	Authenticator authenticator.Request
	// APIAudiences are the audiences of a review without spec.audiences.
	APIAudiences []string
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
func (r *REST) New() runtime.Object { return &authenticationv1.TokenReview{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *REST) Destroy() {}

// GetSingularName implements rest.SingularNameProvider.
func (r *REST) GetSingularName() string { return "tokenreview" }

// Create reviews spec.token (rest.Creater's method), as upstream: an
// empty token is a 400; the token is authenticated for spec.audiences, or
// the API audiences when none are given; status.authenticated says
// whether it was, status.error carries the authenticator's error (for a
// token no authenticator knows, the bearer token authenticator's
// "invalid bearer token"), status.user and status.audiences the identity
// and the audiences it is valid for. An identity valid for none of the
// audiences asked for is a 500.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if ns := genericapirequest.NamespaceValue(ctx); ns != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", ns))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if r.Authenticator == nil {
		return review, nil
	}
	// A request that carries nothing but the token.
	req := &http.Request{Header: http.Header{}}
	req.Header.Add("Authorization", "Bearer "+review.Spec.Token)
	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = r.APIAudiences
	}
	if len(auds) > 0 {
		req = req.WithContext(authenticator.WithAudiences(req.Context(), auds))
	}
	resp, ok, err := r.Authenticator.AuthenticateRequest(req)
	review.Status.Authenticated = ok
	if err != nil {
		review.Status.Error = err.Error()
	}
	if len(auds) > 0 && resp != nil && len(authenticator.Audiences(auds).Intersect(resp.Audiences)) == 0 {
		klog.ErrorS(nil, "Error validating audience", "want", auds, "got", resp.Audiences)
		return nil, errBadAudiences
	}
	if resp != nil && resp.User != nil {
		review.Status.User = userInfo(resp)
		review.Status.Audiences = resp.Audiences
	}
	return review, nil
}

// userInfo is resp's user as a TokenReview's status.user (extra always
// non-nil, as upstream).
func userInfo(resp *authenticator.Response) authenticationv1.UserInfo {
	u := authenticationv1.UserInfo{
		Username: resp.User.GetName(),
		UID:      resp.User.GetUID(),
		Groups:   resp.User.GetGroups(),
		Extra:    map[string]authenticationv1.ExtraValue{},
	}
	for k, v := range resp.User.GetExtra() {
		u.Extra[k] = v
	}
	return u
}
