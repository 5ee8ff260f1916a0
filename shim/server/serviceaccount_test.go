package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/pki"
	satoken "github.com/skiffnode/skiff/shim/serviceaccount"
)

// TestServiceAccountTokens (issue 17, serviceaccounts/token): `kubectl
// create token` through client-go's CreateToken returns a JWT with
// kube-apiserver's claims; the token authenticates as the service account
// (SelfSubjectReview, `kubectl auth whoami`), may read discovery, gets 403
// on pods and secrets, and 401 once expired, for another audience, signed
// by another key, or when its service account or bound pod or secret is
// gone or recreated.
func TestServiceAccountTokens(t *testing.T) {
	s, cfg, admin := startShimWith(t, Options{NodeName: "node-a"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitFor(ctx, t, "default service account", func() (bool, error) {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	sa, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := pki.EnsureBundle(filepath.Dir(s.Kubeconfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := satoken.ParseKey(bundle.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	createToken := func(name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
		return admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	}

	var token string
	t.Run("17-sa-create-token-claims", func(t *testing.T) {
		before := time.Now().Truncate(time.Second)
		tr, err := createToken("default", authenticationv1.TokenRequestSpec{})
		if err != nil {
			t.Fatal(err)
		}
		token = tr.Status.Token
		header, claims := decodeJWT(t, token)
		if header["alg"] != "ES256" || header["kid"] != key.ID {
			t.Errorf("header %v", header)
		}
		if claims.Issuer != satoken.DefaultIssuer || claims.Subject != "system:serviceaccount:default:default" ||
			!slices.Equal(claims.Audience, []string{satoken.DefaultIssuer}) || claims.ID == "" {
			t.Errorf("claims %+v", claims.RegisteredClaims)
		}
		iat, exp := claims.IssuedAt.Time, claims.ExpiresAt.Time
		if iat.Before(before) || exp.Sub(iat) != time.Hour || !claims.NotBefore.Equal(iat) {
			t.Errorf("iat %v nbf %v exp %v, want exp = iat + 1h after %v", iat, claims.NotBefore, exp, before)
		}
		if !tr.Status.ExpirationTimestamp.Time.Equal(exp) && tr.Status.ExpirationTimestamp.Time.Sub(exp).Abs() > time.Second {
			t.Errorf("status expiration %v, token exp %v", tr.Status.ExpirationTimestamp, exp)
		}
		k := claims.Kubernetes
		if k.Namespace != "default" || k.Svcacct != (satoken.Ref{Name: "default", UID: string(sa.UID)}) || k.Pod != nil || k.Secret != nil {
			t.Errorf("kubernetes.io %+v", k)
		}
		if tr.Name != "default" || tr.Namespace != "default" || tr.UID != sa.UID || *tr.Spec.ExpirationSeconds != 3600 {
			t.Errorf("returned request %+v %v", tr.ObjectMeta, *tr.Spec.ExpirationSeconds)
		}
	})

	t.Run("17-sa-create-token-errors", func(t *testing.T) {
		_, err := createToken("default", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not specify a duration less than 10 minutes") {
			t.Errorf("expirationSeconds 599: %v, want 422", err)
		}
		_, err = createToken("nobody", authenticationv1.TokenRequestSpec{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("missing service account: %v, want 404", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default",
			&authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "other"}}, metav1.CreateOptions{})
		if !apierrors.IsConflict(err) {
			t.Errorf("other UID: %v, want 409", err)
		}
		ref := &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "nope"}
		_, err = createToken("default", authenticationv1.TokenRequestSpec{BoundObjectRef: ref})
		if !apierrors.IsNotFound(err) {
			t.Errorf("missing bound pod: %v, want 404", err)
		}
		ref = &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}
		_, err = createToken("default", authenticationv1.TokenRequestSpec{BoundObjectRef: ref})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("bound to a configmap: %v, want 400", err)
		}
	})

	saClient := func(token string) kubernetes.Interface {
		c := rest.AnonymousClientConfig(cfg)
		c.BearerToken = token
		return kubernetes.NewForConfigOrDie(c)
	}
	t.Run("17-sa-token-authorization", func(t *testing.T) {
		c := saClient(token)
		who := whoami(ctx, t, c)
		if who.Username != "system:serviceaccount:default:default" || who.UID != string(sa.UID) ||
			!slices.Equal(who.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}) {
			t.Errorf("whoami %+v", who)
		}
		if _, err := c.Discovery().ServerVersion(); err != nil {
			t.Errorf("version: %v", err)
		}
		if _, err := c.Discovery().ServerGroups(); err != nil {
			t.Errorf("discovery: %v", err)
		}
		_, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("list pods: %v, want 403", err)
		}
		_, err = c.CoreV1().Secrets("default").Get(ctx, "any", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("get secret: %v, want 403", err)
		}
		_, err = c.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("create token: %v, want 403", err)
		}
		if who := whoami(ctx, t, admin); who.Username != AdminUser {
			t.Errorf("admin whoami %+v", who)
		}
	})

	t.Run("17-sa-issuer-discovery", func(t *testing.T) {
		c := saClient(token)
		var config struct {
			Issuer  string   `json:"issuer"`
			JWKSURI string   `json:"jwks_uri"`
			Algs    []string `json:"id_token_signing_alg_values_supported"`
		}
		raw, err := c.Discovery().RESTClient().Get().AbsPath(satoken.OpenIDConfigPath).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &config); err != nil {
			t.Fatal(err)
		}
		if config.Issuer != satoken.DefaultIssuer || config.JWKSURI != satoken.DefaultIssuer+satoken.JWKSPath || !slices.Equal(config.Algs, []string{"ES256"}) {
			t.Errorf("openid-configuration %s", raw)
		}
		raw, err = c.Discovery().RESTClient().Get().AbsPath(satoken.JWKSPath).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var keyset struct {
			Keys []struct{ Kid, Kty, Crv, Alg, Use, X, Y string }
		}
		if err := json.Unmarshal(raw, &keyset); err != nil {
			t.Fatal(err)
		}
		if len(keyset.Keys) != 1 {
			t.Fatalf("jwks %s", raw)
		}
		k := keyset.Keys[0]
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		pub, errP := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if errX != nil || errY != nil || errP != nil || k.Kid != key.ID || k.Kty != "EC" || k.Crv != "P-256" || k.Alg != "ES256" || k.Use != "sig" ||
			!pub.Equal(&key.Private.PublicKey) {
			t.Errorf("jwks %s is not the signing key", raw)
		}
	})

	unauthorized := func(t *testing.T, what, token string) {
		t.Helper()
		_, err := saClient(token).Discovery().ServerVersion()
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("%s: %v, want 401", what, err)
		}
	}
	t.Run("17-sa-token-401", func(t *testing.T) {
		tr, err := createToken("default", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
		if err != nil {
			t.Fatal(err)
		}
		unauthorized(t, "audience vault", tr.Status.Token)
		_, claims := decodeJWT(t, token)
		other, err := satoken.ParseKey(mustOtherKey(t))
		if err != nil {
			t.Fatal(err)
		}
		forged, err := other.Sign(satoken.DefaultIssuer, claims)
		if err != nil {
			t.Fatal(err)
		}
		unauthorized(t, "other key", forged)
		old := *claims
		old.IssuedAt.Time = time.Now().Add(-3 * time.Hour)
		old.NotBefore.Time = old.IssuedAt.Time
		old.ExpiresAt.Time = time.Now().Add(-2 * time.Hour)
		expired, err := key.Sign(satoken.DefaultIssuer, &old)
		if err != nil {
			t.Fatal(err)
		}
		unauthorized(t, "expired", expired)
	})

	t.Run("17-sa-token-bound-objects", func(t *testing.T) {
		robot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, robot, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No serviceAccountName: the ServiceAccount admission plugin sets
		// "default" and mounts its token volume (no audience).
		pod, err := admin.CoreV1().Pods("default").Create(ctx, testPod("web", "node-a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bind := func(sa, kind, name string, uid string) (*authenticationv1.TokenRequest, error) {
			ref := &authenticationv1.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: name, UID: k8stypes.UID(uid)}
			return createToken(sa, authenticationv1.TokenRequestSpec{BoundObjectRef: ref})
		}
		if _, err := bind("robot", "Pod", "web", ""); !apierrors.IsBadRequest(err) {
			t.Errorf("pod of another service account: %v, want 400", err)
		}
		if _, err := bind("default", "Pod", "web", "other-uid"); !apierrors.IsConflict(err) {
			t.Errorf("bound pod UID mismatch: %v, want 409", err)
		}
		tr, err := bind("default", "Pod", "web", string(pod.UID))
		if err != nil {
			t.Fatal(err)
		}
		nodeA := nodeClient(t, s.NodeKubeconfig)
		podRef := &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}
		// NodeRestriction: only for an audience a projected token volume of
		// the pod names: none (the API's) for the plugin's volume, as the
		// node asks for it; not another.
		if _, err := nodeA.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: podRef}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("node-a's token for its pod's kube-api-access volume: %v", err)
		}
		_, err = nodeA.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: podRef, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not found in pod spec volume") {
			t.Errorf("node-a's token for an audience its pod does not project: %v, want 403", err)
		}
		_, err = nodeA.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("node-a's unbound token: %v, want 403", err)
		}
		_, claims := decodeJWT(t, tr.Status.Token)
		if k := claims.Kubernetes; k.Pod == nil || *k.Pod != (satoken.Ref{Name: "web", UID: string(pod.UID)}) || k.Node == nil || k.Node.Name != "node-a" || k.Node.UID == "" {
			t.Errorf("pod-bound claims %+v pod %+v node %+v", k, k.Pod, k.Node)
		}
		who := whoami(ctx, t, saClient(tr.Status.Token))
		if who.Username != "system:serviceaccount:default:default" ||
			!slices.Equal(who.Extra["authentication.kubernetes.io/pod-name"], []string{"web"}) ||
			!slices.Equal(who.Extra["authentication.kubernetes.io/pod-uid"], []string{string(pod.UID)}) ||
			!slices.Equal(who.Extra["authentication.kubernetes.io/node-name"], []string{"node-a"}) {
			t.Errorf("pod-bound whoami %+v", who)
		}
		plain, err := createToken("robot", authenticationv1.TokenRequestSpec{})
		if err != nil {
			t.Fatal(err)
		}
		sec, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secretBound, err := bind("robot", "Secret", "s", string(sec.UID))
		if err != nil {
			t.Fatal(err)
		}
		whoami(ctx, t, saClient(secretBound.Status.Token))

		if err := admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		unauthorized(t, "bound pod deleted", tr.Status.Token)
		if err := admin.CoreV1().Secrets("default").Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		unauthorized(t, "bound secret deleted", secretBound.Status.Token)
		whoami(ctx, t, saClient(plain.Status.Token))
		if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, robot, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		unauthorized(t, "service account recreated", plain.Status.Token)
	})
}

// whoami is `kubectl auth whoami`: a SelfSubjectReview's user.
func whoami(ctx context.Context, t *testing.T, c kubernetes.Interface) authenticationv1.UserInfo {
	t.Helper()
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	return r.Status.UserInfo
}

// decodeJWT returns a token's header and claims, unverified.
func decodeJWT(t *testing.T, token string) (map[string]any, *satoken.Claims) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	var header map[string]any
	claims := &satoken.Claims{}
	for i, into := range []any{&header, claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}

// mustOtherKey is a fresh service-account key (PEM) from another data dir.
func mustOtherKey(t *testing.T) []byte {
	t.Helper()
	b, err := pki.EnsureBundle(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.ServiceAccountKey
}
