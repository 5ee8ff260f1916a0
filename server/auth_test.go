package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// testCA is a certificate authority for client certificates in tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// client issues a client certificate for cn in orgs.
func (ca *testCA) client(t *testing.T, cn string, orgs ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// fakeTokenReviews answers token reviews from a map of token to user
// (unknown tokens are not authenticated) and counts them.
type fakeTokenReviews struct {
	mu      sync.Mutex
	users   map[string]authnv1.UserInfo
	err     error
	reviews int
}

func (f *fakeTokenReviews) CreateTokenReview(_ context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reviews++
	if f.err != nil {
		return nil, f.err
	}
	out := tr.DeepCopy()
	if tr.Spec.Audiences != nil {
		out.Status.Error = "unexpected audiences"
		return out, nil
	}
	if u, ok := f.users[tr.Spec.Token]; ok {
		out.Status.Authenticated, out.Status.User = true, u
	}
	return out, nil
}

func (f *fakeTokenReviews) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reviews
}

// TestAuthenticate checks the kubelet's authentication chain (H.25):
// client certificates against --client-ca-file, bearer tokens through
// TokenReview with --authentication-token-webhook, anonymous requests
// with --anonymous-auth, and that failed credentials are never anonymous.
func TestAuthenticate(t *testing.T) {
	ca, other := newTestCA(t, "cluster-ca"), newTestCA(t, "other-ca")
	admin := ca.client(t, "kube-apiserver-kubelet-client", "system:masters")
	noCN := ca.client(t, "")
	stranger := other.client(t, "mallory")
	reviews := &fakeTokenReviews{users: map[string]authnv1.UserInfo{
		"good": {Username: "system:serviceaccount:kube-system:metrics", UID: "u-1", Groups: []string{"system:serviceaccounts"},
			Extra: map[string]authnv1.ExtraValue{"scope": {"a"}}},
	}}
	anonymous := &User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	tests := []struct {
		name    string
		cfg     AuthnConfig
		cert    *tls.Certificate
		header  string
		want    *User
		wantErr bool
		// wantHeader is the Authorization header left on the request.
		wantHeader string
	}{
		{name: "client certificate", cfg: AuthnConfig{ClientCAs: ca.pool}, cert: &admin,
			want: &User{Name: "kube-apiserver-kubelet-client", Groups: []string{"system:masters", "system:authenticated"}}},
		{name: "certificate of another CA fails even with anonymous", cfg: AuthnConfig{ClientCAs: ca.pool, Anonymous: true}, cert: &stranger, wantErr: true},
		{name: "certificate without common name is anonymous", cfg: AuthnConfig{ClientCAs: ca.pool, Anonymous: true}, cert: &noCN, want: anonymous},
		{name: "certificate ignored without --client-ca-file", cfg: AuthnConfig{Anonymous: true}, cert: &admin, want: anonymous},
		{name: "bearer token", cfg: AuthnConfig{Tokens: reviews}, header: "Bearer good",
			want: &User{Name: "system:serviceaccount:kube-system:metrics", UID: "u-1",
				Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: map[string][]string{"scope": {"a"}}}},
		{name: "lowercase bearer", cfg: AuthnConfig{Tokens: reviews}, header: "bearer good",
			want: &User{Name: "system:serviceaccount:kube-system:metrics", UID: "u-1",
				Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: map[string][]string{"scope": {"a"}}}},
		{name: "rejected token fails even with anonymous", cfg: AuthnConfig{Tokens: reviews, Anonymous: true}, header: "Bearer bad",
			wantErr: true, wantHeader: "Bearer bad"},
		{name: "token ignored without the webhook", cfg: AuthnConfig{Anonymous: true}, header: "Bearer good", want: anonymous, wantHeader: "Bearer good"},
		{name: "basic auth is no token", cfg: AuthnConfig{Tokens: reviews, Anonymous: true}, header: "Basic Zm9vOmJhcg==", want: anonymous, wantHeader: "Basic Zm9vOmJhcg=="},
		{name: "certificate wins over a bad token", cfg: AuthnConfig{ClientCAs: ca.pool, Tokens: reviews}, cert: &admin, header: "Bearer bad",
			want: &User{Name: "kube-apiserver-kubelet-client", Groups: []string{"system:masters", "system:authenticated"}}, wantHeader: "Bearer bad"},
		{name: "token wins over a bad certificate", cfg: AuthnConfig{ClientCAs: ca.pool, Tokens: reviews}, cert: &stranger, header: "Bearer good",
			want: &User{Name: "system:serviceaccount:kube-system:metrics", UID: "u-1",
				Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: map[string][]string{"scope": {"a"}}}},
		{name: "anonymous", cfg: AuthnConfig{Anonymous: true}, want: anonymous},
		{name: "no credentials without anonymous", cfg: AuthnConfig{ClientCAs: ca.pool}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewAuthenticator(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("GET", "/pods", nil)
			if tt.cert != nil {
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tt.cert.Leaf}}
			}
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			got, err := a.Authenticate(r)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Authenticate = %+v, %v; want %+v (error %v)", got, err, tt.want, tt.wantErr)
			}
			if h := r.Header.Get("Authorization"); h != tt.wantHeader {
				t.Errorf("Authorization header left = %q, want %q", h, tt.wantHeader)
			}
		})
	}
}

// TestAuthenticatorNeedsAMethod checks the kubelet's refusal to start
// when nobody could authenticate.
func TestAuthenticatorNeedsAMethod(t *testing.T) {
	if _, err := NewAuthenticator(AuthnConfig{}); err == nil {
		t.Error("NewAuthenticator without any method: no error")
	}
}

// TestTokenReviewCache checks that review answers, authenticated or not,
// are reused for the cache TTL (the kubelet's 2 minutes) and that failed
// reviews are not.
func TestTokenReviewCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	reviews := &fakeTokenReviews{users: map[string]authnv1.UserInfo{"good": {Username: "alice"}}}
	a, err := NewAuthenticator(AuthnConfig{Tokens: reviews, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	auth := func(token string) error {
		r := httptest.NewRequest("GET", "/pods", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		_, err := a.Authenticate(r)
		return err
	}
	steps := []struct {
		name        string
		advance     time.Duration
		token       string
		reviewErr   error
		wantErr     bool
		wantReviews int
	}{
		{name: "first use is reviewed", token: "good", wantReviews: 1},
		{name: "cached", advance: time.Minute, token: "good", wantReviews: 1},
		{name: "rejected token reviewed", token: "bad", wantErr: true, wantReviews: 2},
		{name: "rejection cached", advance: 30 * time.Second, token: "bad", wantErr: true, wantReviews: 2},
		{name: "expired after 2 minutes", advance: 61 * time.Second, token: "good", wantReviews: 3},
		{name: "review error", token: "other", reviewErr: errors.New("apiserver down"), wantErr: true, wantReviews: 4},
		{name: "review error not cached", token: "other", wantErr: true, wantReviews: 5},
	}
	for _, st := range steps {
		clk.SetTime(clk.Now().Add(st.advance))
		reviews.mu.Lock()
		reviews.err = st.reviewErr
		reviews.mu.Unlock()
		err := auth(st.token)
		if (err != nil) != st.wantErr || reviews.count() != st.wantReviews {
			t.Errorf("%s: err = %v, reviews = %d; want error %v, %d reviews", st.name, err, reviews.count(), st.wantErr, st.wantReviews)
		}
	}
}

// TestTTLCacheBound checks that a full cache makes room, expired entries
// first.
func TestTTLCacheBound(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	c := newTTLCache[int](clk, 2)
	c.add("old", 1, time.Second)
	c.add("keep", 2, time.Hour)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	c.add("new", 3, time.Hour)
	if _, ok := c.get("keep"); !ok {
		t.Error("live entry dropped while an expired one could go")
	}
	if v, ok := c.get("new"); !ok || v != 3 {
		t.Errorf("get(new) = %d, %v", v, ok)
	}
	c.add("more", 4, time.Hour)
	if len(c.entries) != 2 {
		t.Errorf("cache holds %d entries, want at most 2", len(c.entries))
	}
}
