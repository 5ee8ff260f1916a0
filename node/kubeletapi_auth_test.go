package node

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/skiffnode/skiff/internal/apiclient"
	"github.com/skiffnode/skiff/server"
)

// testCA is a CA that signs client certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client returns a TLS client certificate for user cn in groups orgs.
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
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// withClientCert is hc presenting cert.
func withClientCert(hc *http.Client, cert tls.Certificate) *http.Client {
	tr := hc.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	return &http.Client{Timeout: hc.Timeout, Transport: tr}
}

// TestKubeletAPITrustsTheAPIServersCA (issue 29): joined to an API server
// and without --client-ca-file, the kubelet API verifies client
// certificates against the CA of the API server's kubeconfig (as kubeadm
// points the kubelet at the cluster CA): the API server's own client
// certificate gets in; a request without credentials, or with a
// certificate of another CA, is refused with 401.
func TestKubeletAPITrustsTheAPIServersCA(t *testing.T) {
	cluster, other := newTestCA(t, "cluster-ca"), newTestCA(t, "other-ca")
	client, err := apiclient.New(&rest.Config{Host: "https://127.0.0.1:1"}) // never asked: no webhooks below
	if err != nil {
		t.Fatal(err)
	}
	url, hc := serveKubeletAPIWith(t, server.Config{}, kubeletAPIDeps{Client: client, ClusterCA: cluster.pem},
		"--authorization-mode=AlwaysAllow", "--authentication-token-webhook=false")
	for _, tc := range []struct {
		name string
		hc   *http.Client
		want int
	}{
		{"anonymous", hc, http.StatusUnauthorized},
		{"certificate of another CA", withClientCert(hc, other.client(t, "kube-apiserver-kubelet-client", "system:masters")), http.StatusUnauthorized},
		{"certificate of the cluster CA", withClientCert(hc, cluster.client(t, "kube-apiserver-kubelet-client", "system:masters")), http.StatusOK},
	} {
		if code, _, body := get(t, tc.hc, url+"/healthz"); code != tc.want {
			t.Errorf("%s: GET /healthz = %d %q, want %d", tc.name, code, body, tc.want)
		}
	}
	if _, _, err := (&KubeletAPIConfig{}).clientCAs([]byte("not PEM")); err == nil || !strings.Contains(err.Error(), "--client-ca-file") {
		t.Errorf("a kubeconfig CA without PEM: err = %v, want one naming --client-ca-file", err)
	}
}

// TestKubeletAPIWarnsWhenOpen (issue 29): anonymous requests with
// AlwaysAllow on a non-loopback address log a warning at start; on
// loopback, or with either closed, they do not.
func TestKubeletAPIWarnsWhenOpen(t *testing.T) {
	for _, tc := range []struct {
		o    KubeletAPIConfig
		warn bool
	}{
		{KubeletAPIConfig{AnonymousAuth: true, AuthorizationMode: AuthzAlwaysAllow}, true},
		{KubeletAPIConfig{AnonymousAuth: true, AuthorizationMode: AuthzAlwaysAllow, BindAddress: "0.0.0.0"}, true},
		{KubeletAPIConfig{AnonymousAuth: true, AuthorizationMode: AuthzAlwaysAllow, BindAddress: "192.0.2.7"}, true},
		{KubeletAPIConfig{AnonymousAuth: true, AuthorizationMode: AuthzAlwaysAllow, BindAddress: "127.0.0.1"}, false},
		{KubeletAPIConfig{AnonymousAuth: true, AuthorizationMode: AuthzWebhook}, false},
		{KubeletAPIConfig{AuthorizationMode: AuthzAlwaysAllow}, false},
	} {
		var buf bytes.Buffer
		tc.o.logAccess(slog.New(slog.NewTextHandler(&buf, nil)), "x:10250", "none")
		if got := strings.Contains(buf.String(), "level=WARN"); got != tc.warn {
			t.Errorf("%+v: warned %v, want %v:\n%s", tc.o, got, tc.warn, buf.String())
		}
	}
}
