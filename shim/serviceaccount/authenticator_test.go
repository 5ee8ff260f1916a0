package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// fakeObjects is Objects over maps keyed "namespace/name".
type fakeObjects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
}

func lookup[T any](m map[string]*T, resource, ns, name string) (*T, error) {
	if o, ok := m[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (f fakeObjects) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return lookup(f.sas, "serviceaccounts", ns, name)
}

func (f fakeObjects) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return lookup(f.pods, "pods", ns, name)
}

func (f fakeObjects) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return lookup(f.secrets, "secrets", ns, name)
}

func meta(name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}
}

func newTestKey(t *testing.T) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParseKey(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestAuthenticator (issue 17, serviceaccounts/token; seed checklist
// authentication rows): upstream's JWTTokenAuthenticator + validator
// decisions on a fake clock and fake objects.
func TestAuthenticator(t *testing.T) {
	key, other := newTestKey(t), newTestKey(t)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	sa := &corev1.ServiceAccount{ObjectMeta: meta("default", "sa-uid")}
	pod := &corev1.Pod{ObjectMeta: meta("web", "pod-uid")}
	secret := &corev1.Secret{ObjectMeta: meta("s", "secret-uid")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	long := metav1.NewTime(t0.Add(-2 * time.Minute))
	recent := metav1.NewTime(t0.Add(30 * time.Second)) // 30 s before the default now
	live := fakeObjects{
		sas:     map[string]*corev1.ServiceAccount{"ns/default": sa},
		pods:    map[string]*corev1.Pod{"ns/web": pod},
		secrets: map[string]*corev1.Secret{"ns/s": secret},
	}
	with := func(change func(*fakeObjects)) fakeObjects {
		f := fakeObjects{sas: map[string]*corev1.ServiceAccount{}, pods: map[string]*corev1.Pod{}, secrets: map[string]*corev1.Secret{}}
		for k, v := range live.sas {
			f.sas[k] = v.DeepCopy()
		}
		for k, v := range live.pods {
			f.pods[k] = v.DeepCopy()
		}
		for k, v := range live.secrets {
			f.secrets[k] = v.DeepCopy()
		}
		change(&f)
		return f
	}
	sign := func(k *Key, issuer string, b Binding, issued time.Time, auds ...string) string {
		c, err := NewClaims(sa, b, issued, time.Hour, auds, "jti-1")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := k.Sign(issuer, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	plain := sign(key, DefaultIssuer, Binding{}, t0, DefaultIssuer)
	podBound := sign(key, DefaultIssuer, Binding{Pod: pod, Node: node}, t0, DefaultIssuer)
	secretBound := sign(key, DefaultIssuer, Binding{Secret: secret}, t0, DefaultIssuer)

	for _, tc := range []struct {
		name    string
		token   string
		objects fakeObjects
		now     time.Time
		reqAuds authenticator.Audiences // request context audiences
		// want: "" authenticated; "no opinion"; else a substring of the error.
		want      string
		wantExtra map[string][]string
	}{
		{name: "plain", token: plain, want: "", wantExtra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=jti-1"}}},
		{name: "pod-bound", token: podBound, want: "", wantExtra: map[string][]string{
			"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
			"authentication.kubernetes.io/pod-name":      {"web"}, "authentication.kubernetes.io/pod-uid": {"pod-uid"},
			"authentication.kubernetes.io/node-name": {"node-a"}, "authentication.kubernetes.io/node-uid": {"node-uid"},
		}},
		{name: "secret-bound", token: secretBound, want: ""},
		{name: "not a JWT", token: "abc", want: "no opinion"},
		{name: "other issuer", token: sign(key, "https://other", Binding{}, t0, DefaultIssuer), want: "no opinion"},
		{name: "other key", token: sign(other, DefaultIssuer, Binding{}, t0, DefaultIssuer), want: "invalid signature"},
		{name: "tampered payload", token: tamper(t, plain), want: "invalid signature"},
		{name: "expired", token: plain, now: t0.Add(time.Hour + 2*time.Minute), want: "has expired"},
		{name: "expired within leeway", token: plain, now: t0.Add(time.Hour + 30*time.Second), want: ""},
		{name: "not yet valid", token: plain, now: t0.Add(-2 * time.Minute), want: "not valid yet"},
		{name: "wrong audience", token: sign(key, DefaultIssuer, Binding{}, t0, "vault"), want: "token audiences"},
		{name: "one matching audience", token: sign(key, DefaultIssuer, Binding{}, t0, "vault", DefaultIssuer), want: ""},
		{name: "request audience", token: sign(key, DefaultIssuer, Binding{}, t0, "vault"), reqAuds: authenticator.Audiences{"vault"}, want: ""},
		{name: "no audience claim: the API's", token: sign(key, DefaultIssuer, Binding{}, t0), want: ""},
		{name: "sa gone", token: plain, objects: with(func(f *fakeObjects) { delete(f.sas, "ns/default") }), want: "not found"},
		{name: "sa recreated", token: plain, objects: with(func(f *fakeObjects) { f.sas["ns/default"].UID = "new" }), want: "does not match claim"},
		{name: "sa deleted long ago", token: plain, objects: with(func(f *fakeObjects) { f.sas["ns/default"].DeletionTimestamp = &long }), want: "has been deleted"},
		{name: "sa deleted recently", token: plain, objects: with(func(f *fakeObjects) { f.sas["ns/default"].DeletionTimestamp = &recent }), want: ""},
		{name: "pod gone", token: podBound, objects: with(func(f *fakeObjects) { delete(f.pods, "ns/web") }), want: "invalidated"},
		{name: "pod recreated", token: podBound, objects: with(func(f *fakeObjects) { f.pods["ns/web"].UID = "new" }), want: "pod UID"},
		{name: "pod deleted long ago", token: podBound, objects: with(func(f *fakeObjects) { f.pods["ns/web"].DeletionTimestamp = &long }), want: "invalidated"},
		{name: "secret gone", token: secretBound, objects: with(func(f *fakeObjects) { delete(f.secrets, "ns/s") }), want: "invalidated"},
		{name: "secret recreated", token: secretBound, objects: with(func(f *fakeObjects) { f.secrets["ns/s"].UID = "new" }), want: "secret UID"},
		{name: "pod-bound, only the secret changed", token: podBound, objects: with(func(f *fakeObjects) { delete(f.secrets, "ns/s") }), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := tc.objects
			if objects.sas == nil {
				objects = live
			}
			now := tc.now
			if now.IsZero() {
				now = t0.Add(time.Minute)
			}
			a := &Authenticator{Key: key, Issuer: DefaultIssuer, Audiences: authenticator.Audiences{DefaultIssuer},
				Objects: objects, Now: func() time.Time { return now }}
			ctx := context.Background()
			if tc.reqAuds != nil {
				ctx = authenticator.WithAudiences(ctx, tc.reqAuds)
			}
			resp, ok, err := a.AuthenticateToken(ctx, tc.token)
			switch tc.want {
			case "":
				if err != nil || !ok {
					t.Fatalf("got ok=%v err=%v, want authenticated", ok, err)
				}
				u := resp.User
				if u.GetName() != "system:serviceaccount:ns:default" || u.GetUID() != "sa-uid" ||
					!slices.Equal(u.GetGroups(), []string{"system:serviceaccounts", "system:serviceaccounts:ns"}) {
					t.Errorf("user %s uid %s groups %v", u.GetName(), u.GetUID(), u.GetGroups())
				}
				for k, v := range tc.wantExtra {
					if !slices.Equal(u.GetExtra()[k], v) {
						t.Errorf("extra %s = %v, want %v", k, u.GetExtra()[k], v)
					}
				}
				if len(resp.Audiences) == 0 {
					t.Error("no audiences in the response")
				}
			case "no opinion":
				if ok || err != nil {
					t.Errorf("got ok=%v err=%v, want no opinion", ok, err)
				}
			default:
				if ok || err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got ok=%v err=%v, want an error with %q", ok, err, tc.want)
				}
			}
		})
	}
}

// tamper changes the payload of tok without re-signing it.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts", tok, len(parts))
	}
	c := &Claims{}
	if err := decodeSegment(parts[1], c); err != nil {
		t.Fatal(err)
	}
	c.Kubernetes.Svcacct.Name = "admin"
	parts[1] = encodeSegment(t, c)
	return strings.Join(parts, ".")
}
