package server

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestServiceAccountAuthorizers (issue 17, service-account authorization):
// every authenticated user may create SelfSubjectReviews and
// SelfSubjectAccessReviews (kubeadm's system:basic-user); only service
// accounts may read the issuer discovery documents
// (system:service-account-issuer-discovery); nothing else.
func TestServiceAccountAuthorizers(t *testing.T) {
	sa := &user.DefaultInfo{Name: "system:serviceaccount:ns:default",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", user.AllAuthenticated}}
	node := &user.DefaultInfo{Name: "system:node:a", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	unauthenticated := &user.DefaultInfo{Name: "x"}
	review := func(u user.Info, verb string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: u, Verb: verb, ResourceRequest: true, APIGroup: "authentication.k8s.io",
			APIVersion: "v1", Resource: "selfsubjectreviews"}
	}
	accessReview := func(u user.Info, resource string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: u, Verb: "create", ResourceRequest: true, APIGroup: "authorization.k8s.io",
			APIVersion: "v1", Resource: resource}
	}
	path := func(u user.Info, verb, p string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: u, Verb: verb, Path: p}
	}
	for _, tc := range []struct {
		name string
		a    authorizer.Attributes
		want authorizer.Decision
	}{
		{"sa whoami", review(sa, "create"), authorizer.DecisionAllow},
		{"node whoami", review(node, "create"), authorizer.DecisionAllow},
		{"unauthenticated whoami", review(unauthenticated, "create"), authorizer.DecisionNoOpinion},
		{"sa lists reviews", review(sa, "list"), authorizer.DecisionNoOpinion},
		{"sa can-i", accessReview(sa, "selfsubjectaccessreviews"), authorizer.DecisionAllow},
		{"unauthenticated can-i", accessReview(unauthenticated, "selfsubjectaccessreviews"), authorizer.DecisionNoOpinion},
		{"sa subjectaccessreview", accessReview(sa, "subjectaccessreviews"), authorizer.DecisionNoOpinion},
		{"sa selfsubjectrulesreview", accessReview(sa, "selfsubjectrulesreviews"), authorizer.DecisionNoOpinion},
		{"sa openid-configuration", path(sa, "get", "/.well-known/openid-configuration"), authorizer.DecisionAllow},
		{"sa jwks", path(sa, "get", "/openid/v1/jwks"), authorizer.DecisionAllow},
		{"sa posts jwks", path(sa, "post", "/openid/v1/jwks"), authorizer.DecisionNoOpinion},
		{"node jwks", path(node, "get", "/openid/v1/jwks"), authorizer.DecisionNoOpinion},
		{"sa other path", path(sa, "get", "/metrics"), authorizer.DecisionNoOpinion},
		{"sa pods", authorizer.AttributesRecord{User: sa, Verb: "list", ResourceRequest: true, APIVersion: "v1", Resource: "pods"}, authorizer.DecisionNoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := authorizer.DecisionNoOpinion
			for _, az := range []authorizer.Authorizer{basicUser(), issuerDiscovery()} {
				d, _, err := az.Authorize(context.Background(), tc.a)
				if err != nil {
					t.Fatal(err)
				}
				if d != authorizer.DecisionNoOpinion {
					got = d
				}
			}
			if got != tc.want {
				t.Errorf("decision %v, want %v", got, tc.want)
			}
		})
	}
}
