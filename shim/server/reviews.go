package server

import (
	"context"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/skiffnode/skiff/shim/registry/accessreview"
	"github.com/skiffnode/skiff/shim/registry/tokenreview"
)

// addReviewAPIs adds authentication.k8s.io/v1 tokenreviews and
// authorization.k8s.io/v1 subjectaccessreviews, selfsubjectaccessreviews
// and localsubjectaccessreviews (issue 29: a kubelet's webhook
// authentication and authorization). They answer with cfg's request
// authenticator and authorizer as they are when a review comes, that is
// once Config.Complete has added the loopback token's: what
// kube-apiserver passes to the same storages (pkg/controlplane/apiserver/
// apis.go). cfg.Authentication.APIAudiences must be set.
func addReviewAPIs(st *apiStorage, cfg *genericapiserver.Config) {
	authn := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		return cfg.Authentication.Authenticator.AuthenticateRequest(req)
	})
	az := authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		return cfg.Authorization.Authorizer.Authorize(ctx, a)
	})
	if st.byGroup[authenticationv1.GroupName] == nil {
		st.byGroup[authenticationv1.GroupName] = map[string]rest.Storage{}
	}
	st.byGroup[authenticationv1.GroupName]["tokenreviews"] = &tokenreview.REST{
		Authenticator: authn, APIAudiences: cfg.Authentication.APIAudiences,
	}
	st.byGroup[authorizationv1.GroupName] = map[string]rest.Storage{
		"subjectaccessreviews":      accessreview.NewSubjectAccessReviewREST(az),
		"selfsubjectaccessreviews":  accessreview.NewSelfSubjectAccessReviewREST(az),
		"localsubjectaccessreviews": accessreview.NewLocalSubjectAccessReviewREST(az),
	}
}

// basicUser allows every authenticated user to create SelfSubjectReviews
// and SelfSubjectAccessReviews (`kubectl auth whoami`, `kubectl auth
// can-i`): those rules of upstream's system:basic-user role, bound to
// system:authenticated (plugin/pkg/auth/authorizer/rbac/bootstrappolicy).
// Its selfsubjectrulesreviews are not served.
func basicUser() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.IsResourceRequest() && a.GetVerb() == "create" && a.GetSubresource() == "" &&
			(a.GetAPIGroup() == authenticationv1.GroupName && a.GetResource() == "selfsubjectreviews" ||
				a.GetAPIGroup() == authorizationv1.GroupName && a.GetResource() == "selfsubjectaccessreviews") &&
			a.GetUser() != nil && slices.Contains(a.GetUser().GetGroups(), user.AllAuthenticated) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}
