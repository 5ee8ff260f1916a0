package server

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiffnode/skiff/shim/pki"
	satoken "github.com/skiffnode/skiff/shim/serviceaccount"
)

// TestReviewAPIs (issue 29): the shim answers a kubelet's webhook
// authentication (TokenReview) and authorization (SubjectAccessReview)
// as kube-apiserver would: its node identity may create both, a user
// without rights gets 403 on SubjectAccessReviews (but may ask about
// itself: SelfSubjectAccessReview), the answers come from the shim's own
// authenticators and authorizers, and discovery lists both groups.
func TestReviewAPIs(t *testing.T) {
	s, cfg, admin := startShimWith(t, Options{NodeName: "node-a"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	node := nodeClient(t, s.NodeKubeconfig)
	bundle, err := pki.EnsureBundle(filepath.Dir(s.Kubeconfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := certClient(t, cfg, bundle, "alice")

	t.Run("29-tokenreview", func(t *testing.T) {
		testTokenReviews(ctx, t, admin, node, bundle.AdminToken)
	})
	t.Run("29-subjectaccessreview", func(t *testing.T) {
		testSubjectAccessReviews(ctx, t, node, alice)
	})
	t.Run("29-self-and-local-reviews", func(t *testing.T) {
		testSelfAndLocalReviews(ctx, t, admin, alice)
	})
	t.Run("29-discovery", func(t *testing.T) {
		for gv, want := range map[string][]string{
			"authentication.k8s.io/v1": {"selfsubjectreviews", "tokenreviews"},
			"authorization.k8s.io/v1":  {"localsubjectaccessreviews", "selfsubjectaccessreviews", "subjectaccessreviews"},
		} {
			list, err := admin.Discovery().ServerResourcesForGroupVersion(gv)
			if err != nil {
				t.Fatalf("%s: %v", gv, err)
			}
			var got []string
			for _, r := range list.APIResources {
				got = append(got, r.Name)
				if !slices.Equal(r.Verbs, []string{"create"}) {
					t.Errorf("%s %s verbs %v", gv, r.Name, r.Verbs)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s resources %v, want %v", gv, got, want)
			}
		}
		paths, err := admin.Discovery().OpenAPIV3().Paths()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := paths["apis/authorization.k8s.io/v1"]; !ok {
			t.Errorf("no OpenAPI v3 document for authorization.k8s.io/v1")
		}
	})
}

// certClient is a client authenticated by a client certificate of the
// shim's CA with common name cn (a user with no rights but
// system:authenticated's).
func certClient(t *testing.T, cfg *rest.Config, b *pki.Bundle, cn string) kubernetes.Interface {
	t.Helper()
	certPEM, keyPEM, err := b.ClientCert(cn)
	if err != nil {
		t.Fatal(err)
	}
	c := rest.AnonymousClientConfig(cfg)
	c.CertData, c.KeyData = certPEM, keyPEM
	c.QPS, c.Burst = 100, 100
	return kubernetes.NewForConfigOrDie(c)
}

func testTokenReviews(ctx context.Context, t *testing.T, admin, node kubernetes.Interface, adminToken string) {
	review := func(token string, auds ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := node.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("node creates a TokenReview: %v", err)
		}
		return r.Status
	}
	st := review(adminToken)
	if !st.Authenticated || st.Error != "" || st.User.Username != AdminUser ||
		!slices.Equal(st.User.Groups, []string{"system:masters", "system:authenticated"}) ||
		!slices.Equal(st.Audiences, []string{satoken.DefaultIssuer}) {
		t.Errorf("admin token: %+v", st)
	}
	waitFor(ctx, t, "default service account", func() (bool, error) {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st = review(tr.Status.Token)
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:default" || st.User.UID == "" ||
		!slices.Equal(st.User.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}) ||
		!slices.Equal(st.Audiences, []string{satoken.DefaultIssuer}) {
		t.Errorf("service-account token: %+v", st)
	}
	// A token no authenticator knows: kube-apiserver's answer (the bearer
	// token authenticator's default error).
	if st := review("bogus"); st.Authenticated || st.Error != "invalid bearer token" || st.User.Username != "" {
		t.Errorf("bogus token: %+v", st)
	}
	// Valid tokens asked about for an audience they are not for.
	for name, token := range map[string]string{"admin": adminToken, "service-account": tr.Status.Token} {
		if st := review(token, "other"); st.Authenticated || st.User.Username != "" {
			t.Errorf("%s token for audience other: %+v", name, st)
		}
	}
	_, err = node.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("empty token: %v, want 400", err)
	}
}

func sar(u string, groups []string, verb, resource, sub, name string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Subresource: sub, Name: name},
	}}
}

func testSubjectAccessReviews(ctx context.Context, t *testing.T, node, alice kubernetes.Interface) {
	ask := func(r *authorizationv1.SubjectAccessReview) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		out, err := node.AuthorizationV1().SubjectAccessReviews().Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("node creates a SubjectAccessReview: %v", err)
		}
		return out.Status
	}
	// The kubelet API's client: the shim's own kubelet client certificate.
	st := ask(sar("kube-apiserver-kubelet-client", []string{"system:masters", "system:authenticated"}, "get", "nodes", "proxy", "node-a"))
	if !st.Allowed || st.Denied || st.EvaluationError != "" {
		t.Errorf("kubelet client, get nodes/proxy: %+v", st)
	}
	st = ask(sar("alice", []string{"system:authenticated"}, "get", "nodes", "proxy", "node-a"))
	if st.Allowed || st.Denied {
		t.Errorf("alice, get nodes/proxy: %+v", st)
	}
	// The Node authorizer answers for nodes: its own Node, not another's.
	nodeGroups := []string{"system:nodes", "system:authenticated"}
	if st := ask(sar("system:node:node-a", nodeGroups, "get", "nodes", "", "node-a")); !st.Allowed {
		t.Errorf("node-a gets node-a: %+v", st)
	}
	if st := ask(sar("system:node:node-a", nodeGroups, "get", "nodes", "", "node-b")); st.Allowed {
		t.Errorf("node-a gets node-b: %+v", st)
	}
	nonResource := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", Groups: []string{"system:authenticated"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/version"}}}
	if st := ask(nonResource); !st.Allowed {
		t.Errorf("alice, get /version: %+v", st)
	}
	// Unparsable selectors are reported, as upstream.
	bad := sar("alice", []string{"system:authenticated"}, "list", "pods", "", "")
	bad.Spec.ResourceAttributes.LabelSelector = &authorizationv1.LabelSelectorAttributes{RawSelector: "a in in"}
	if st := ask(bad); st.Allowed || st.EvaluationError != "spec.resourceAttributes.labelSelector ignored due to parse error" {
		t.Errorf("bad selector: %+v", st)
	}
	for name, r := range map[string]*authorizationv1.SubjectAccessReview{
		"no attributes": {Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice"}},
		"no user":       sar("", nil, "get", "pods", "", ""),
	} {
		_, err := node.AuthorizationV1().SubjectAccessReviews().Create(ctx, r, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want 422", name, err)
		}
	}
	_, err := alice.AuthorizationV1().SubjectAccessReviews().Create(ctx,
		sar("alice", nil, "get", "pods", "", ""), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("alice creates a SubjectAccessReview: %v, want 403", err)
	}
	_, err = alice.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("alice creates a TokenReview: %v, want 403", err)
	}
}

func testSelfAndLocalReviews(ctx context.Context, t *testing.T, admin, alice kubernetes.Interface) {
	can := func(c kubernetes.Interface, verb, resource string) bool {
		t.Helper()
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Resource: resource, Namespace: "default"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview: %v", err)
		}
		return r.Status.Allowed
	}
	if !can(admin, "delete", "pods") {
		t.Error("admin may not delete pods")
	}
	if can(alice, "list", "pods") {
		t.Error("alice may list pods")
	}
	lsar := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", Groups: []string{"system:masters"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "default"}}}
	r, err := admin.AuthorizationV1().LocalSubjectAccessReviews("default").Create(ctx, lsar, metav1.CreateOptions{})
	if err != nil || !r.Status.Allowed {
		t.Errorf("local review: %+v %v", r, err)
	}
	lsar.Spec.ResourceAttributes.Namespace = metav1.NamespaceSystem
	_, err = admin.AuthorizationV1().LocalSubjectAccessReviews("default").Create(ctx, lsar, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must match metadata.namespace") {
		t.Errorf("local review of another namespace: %v, want 422", err)
	}
}
