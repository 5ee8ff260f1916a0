package serviceaccount

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func decodeSegment(seg string, into any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

func encodeSegment(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// TestSignedClaims (issue 17, serviceaccounts/token): a token's header and
// payload are kube-apiserver 1.34's: alg ES256 and kid only; iss, sub,
// aud (an array), iat = nbf, exp, jti and the kubernetes.io claim with
// the bound object.
func TestSignedClaims(t *testing.T) {
	key := newTestKey(t)
	t0 := time.Unix(1_800_000_000, 0)
	sa := &corev1.ServiceAccount{ObjectMeta: meta("default", "sa-uid")}
	pod := &corev1.Pod{ObjectMeta: meta("web", "pod-uid")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	c, err := NewClaims(sa, Binding{Pod: pod, Node: node}, t0, 10*time.Minute, []string{"a"}, "id-1")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := key.Sign("https://iss", c)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	var header map[string]any
	var payload map[string]any
	if err := decodeSegment(parts[0], &header); err != nil {
		t.Fatal(err)
	}
	if err := decodeSegment(parts[1], &payload); err != nil {
		t.Fatal(err)
	}
	if len(header) != 2 || header["alg"] != "ES256" || header["kid"] != key.ID {
		t.Errorf("header %v", header)
	}
	want := `{"aud":["a"],"exp":1800000600,"iat":1800000000,"iss":"https://iss","jti":"id-1",` +
		`"kubernetes.io":{"namespace":"ns","node":{"name":"node-a"},"pod":{"name":"web","uid":"pod-uid"},` +
		`"serviceaccount":{"name":"default","uid":"sa-uid"}},"nbf":1800000000,"sub":"system:serviceaccount:ns:default"}`
	got, err := json.Marshal(payload) // map keys sorted
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("payload\n got %s\nwant %s", got, want)
	}
	if _, err := NewClaims(sa, Binding{Pod: pod, Secret: &corev1.Secret{}}, t0, time.Hour, nil, ""); err == nil {
		t.Error("a token bound to a pod and a secret was accepted")
	}
	secretBound, err := NewClaims(sa, Binding{Secret: &corev1.Secret{ObjectMeta: meta("s", "s-uid")}}, t0, time.Hour, nil, "")
	if err != nil || secretBound.Kubernetes.Secret == nil || secretBound.Kubernetes.Pod != nil ||
		!slices.Equal([]string{secretBound.Kubernetes.Secret.Name, secretBound.Kubernetes.Secret.UID}, []string{"s", "s-uid"}) {
		t.Errorf("secret-bound claims %+v, %v", secretBound, err)
	}
}

// TestOpenIDMetadataIssuer: discovery is rendered only for an https
// issuer without query or fragment, as upstream's provider.
func TestOpenIDMetadataIssuer(t *testing.T) {
	key := newTestKey(t)
	for issuer, ok := range map[string]bool{
		DefaultIssuer: true, "https://example.com/a": true,
		"http://example.com": false, "https://x?a=b": false, "https://x#f": false, "api": false,
	} {
		md, err := NewOpenIDMetadata(issuer, "127.0.0.1:6443", key)
		if (err == nil) != ok {
			t.Errorf("%s: %v, want ok=%v", issuer, err, ok)
		}
		want := `"jwks_uri":"https://127.0.0.1:6443/openid/v1/jwks"`
		if issuer == DefaultIssuer { // where pods reach the API
			want = `"jwks_uri":"https://kubernetes.default.svc.cluster.local/openid/v1/jwks"`
		}
		if ok && !strings.Contains(string(md.Config), want) {
			t.Errorf("%s: %s, want %s", issuer, md.Config, want)
		}
	}
}
