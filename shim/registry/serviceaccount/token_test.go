package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	satoken "github.com/skiffnode/skiff/shim/serviceaccount"
)

// fakeGetter is a rest.Getter over objects by "namespace/name", reading
// the namespace from the context as the Stores do.
type fakeGetter map[string]runtime.Object

func (f fakeGetter) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if o, ok := f[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, name)
}

func obj(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func testKey(t *testing.T) *satoken.Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	key, err := satoken.ParseKey(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestTokenREST (issue 17, serviceaccounts/token): upstream TokenREST's
// decisions (error codes and messages) on fake Stores and a fake clock.
func TestTokenREST(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := &corev1.Pod{ObjectMeta: obj("ns", "web", "pod-uid"), Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "node-a"}}
	lost := &corev1.Pod{ObjectMeta: obj("ns", "lost", "lost-uid"), Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "gone"}}
	other := &corev1.Pod{ObjectMeta: obj("ns", "other", "other-uid"), Spec: corev1.PodSpec{ServiceAccountName: "robot"}}
	unnamed := &corev1.Pod{ObjectMeta: obj("ns", "unnamed", "unnamed-uid")}
	r := &TokenREST{
		ServiceAccounts: fakeGetter{"ns/default": &corev1.ServiceAccount{ObjectMeta: obj("ns", "default", "sa-uid")}},
		Pods:            fakeGetter{"ns/web": web, "ns/lost": lost, "ns/other": other, "ns/unnamed": unnamed},
		Secrets:         fakeGetter{"ns/s": &corev1.Secret{ObjectMeta: obj("ns", "s", "secret-uid")}},
		Nodes:           fakeGetter{"/node-a": &corev1.Node{ObjectMeta: obj("", "node-a", "node-uid")}},
		Key:             testKey(t), Issuer: "https://iss", Audiences: []string{"https://iss"},
		Now: func() time.Time { return t0 }, NewJTI: func() string { return "jti" },
	}
	ref := func(kind, name, uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: kind, Name: name, UID: types.UID(uid)}
	}
	for _, tc := range []struct {
		name     string
		sa       string
		req      authenticationv1.TokenRequest
		admitErr error
		wantCode int32  // 0: success
		wantMsg  string // substring of the error
		check    func(t *testing.T, c *satoken.Claims, out *authenticationv1.TokenRequest)
	}{
		{name: "defaults", sa: "default", check: func(t *testing.T, c *satoken.Claims, out *authenticationv1.TokenRequest) {
			if *out.Spec.ExpirationSeconds != 3600 || !slices.Equal(out.Spec.Audiences, []string{"https://iss"}) ||
				out.Name != "default" || out.Namespace != "ns" || out.UID != "sa-uid" {
				t.Errorf("request %+v spec %+v", out.ObjectMeta, out.Spec)
			}
			if !out.Status.ExpirationTimestamp.Time.Equal(t0.Add(time.Hour)) || !c.ExpiresAt.Equal(t0.Add(time.Hour)) {
				t.Errorf("expiration %v, exp %v", out.Status.ExpirationTimestamp, c.ExpiresAt)
			}
			if c.Issuer != "https://iss" || c.ID != "jti" || c.Kubernetes.Pod != nil || c.Kubernetes.Secret != nil {
				t.Errorf("claims %+v", c)
			}
		}},
		{name: "audiences and expiration", sa: "default",
			req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: ptr.To[int64](600)}},
			check: func(t *testing.T, c *satoken.Claims, _ *authenticationv1.TokenRequest) {
				if !slices.Equal(c.Audience, []string{"vault"}) || c.ExpiresAt.Sub(c.IssuedAt.Time) != 10*time.Minute {
					t.Errorf("aud %v exp-iat %v", c.Audience, c.ExpiresAt.Sub(c.IssuedAt.Time))
				}
			}},
		{name: "too short", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "may not specify a duration less than 10 minutes"},
		{name: "too long", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1<<32 + 1)}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "larger than 2^32 seconds"},
		{name: "no such service account", sa: "nobody", wantCode: http.StatusNotFound},
		{name: "name mismatch", sa: "default", req: authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "must match the service account name"},
		{name: "namespace mismatch", sa: "default", req: authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "x"}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "must match the service account namespace"},
		{name: "UID mismatch", sa: "default", req: authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "x"}},
			wantCode: http.StatusConflict, wantMsg: "does not match the UID of the service account"},
		{name: "admission refuses", sa: "default", admitErr: apierrors.NewForbidden(schema.GroupResource{}, "default", errors.New("no")),
			wantCode: http.StatusForbidden},
		{name: "pod-bound", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "web", "pod-uid")}},
			check: func(t *testing.T, c *satoken.Claims, _ *authenticationv1.TokenRequest) {
				k := c.Kubernetes
				if k.Pod == nil || *k.Pod != (satoken.Ref{Name: "web", UID: "pod-uid"}) || k.Node == nil || *k.Node != (satoken.Ref{Name: "node-a", UID: "node-uid"}) {
					t.Errorf("claims %+v", k)
				}
			}},
		{name: "pod on a missing node", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "lost", "")}},
			check: func(t *testing.T, c *satoken.Claims, _ *authenticationv1.TokenRequest) {
				if n := c.Kubernetes.Node; n == nil || *n != (satoken.Ref{Name: "gone"}) {
					t.Errorf("node claim %+v", n)
				}
			}},
		{name: "pod of another service account", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "other", "")}},
			wantCode: http.StatusBadRequest, wantMsg: "pod running with different serviceaccount name"},
		{name: "pod without serviceAccountName runs as default", sa: "default",
			req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "unnamed", "")}},
			check: func(t *testing.T, c *satoken.Claims, _ *authenticationv1.TokenRequest) {
				if p := c.Kubernetes.Pod; p == nil || p.Name != "unnamed" || c.Kubernetes.Node != nil {
					t.Errorf("claims %+v", c.Kubernetes)
				}
			}},
		{name: "pod UID mismatch", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "web", "x")}},
			wantCode: http.StatusConflict, wantMsg: "does not match the UID in record"},
		{name: "missing pod", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "nope", "")}},
			wantCode: http.StatusNotFound},
		{name: "secret-bound", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Secret", "s", "secret-uid")}},
			check: func(t *testing.T, c *satoken.Claims, _ *authenticationv1.TokenRequest) {
				if s := c.Kubernetes.Secret; s == nil || *s != (satoken.Ref{Name: "s", UID: "secret-uid"}) || c.Kubernetes.Pod != nil {
					t.Errorf("claims %+v", c.Kubernetes)
				}
			}},
		{name: "node-bound", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Node", "node-a", "")}},
			wantCode: http.StatusBadRequest, wantMsg: "cannot bind token to object of type /v1, Kind=Node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := genericapirequest.WithNamespace(context.Background(), "ns")
			var admit rest.ValidateObjectFunc
			if tc.admitErr != nil {
				admit = func(context.Context, runtime.Object) error { return tc.admitErr }
			}
			out, err := r.Create(ctx, tc.sa, tc.req.DeepCopy(), admit, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				var status apierrors.APIStatus
				if !errors.As(err, &status) || status.Status().Code != tc.wantCode || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("error %v, want %d with %q", err, tc.wantCode, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := out.(*authenticationv1.TokenRequest)
			claims := &satoken.Claims{}
			_, err = jwt.ParseWithClaims(tr.Status.Token, claims, func(*jwt.Token) (any, error) { return &r.Key.Private.PublicKey, nil },
				jwt.WithoutClaimsValidation())
			if err != nil {
				t.Fatal(err)
			}
			if claims.Subject != "system:serviceaccount:ns:default" || claims.Kubernetes.Svcacct != (satoken.Ref{Name: "default", UID: "sa-uid"}) {
				t.Errorf("claims %+v", claims)
			}
			if tc.check != nil {
				tc.check(t, claims, tr)
			}
		})
	}
}
