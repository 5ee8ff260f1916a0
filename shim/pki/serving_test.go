package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// TestServingCertificateCoversNewHosts: a serving certificate that does
// not name a host asked for now (the kubernetes Service's cluster IP, on a
// data directory of an older skiff) is issued again by the same CA; one
// that names them all is kept.
func TestServingCertificateCoversNewHosts(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureBundle(dir, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	same, err := EnsureBundle(dir, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(same.ServingCert, first.ServingCert) {
		t.Error("the serving certificate was issued again though it covered the hosts")
	}
	grown, err := EnsureBundle(dir, []string{"127.0.0.1", "10.96.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(grown.ServingCert, first.ServingCert) {
		t.Fatal("the serving certificate was kept though it does not name 10.96.0.1")
	}
	if !bytes.Equal(grown.CACert, first.CACert) {
		t.Error("the CA changed")
	}
	cert := parseCert(t, grown.ServingCert)
	roots := x509.NewCertPool()
	roots.AddCert(parseCert(t, first.CACert))
	for _, h := range []string{"10.96.0.1", "127.0.0.1", "kubernetes.default.svc", LoopbackServerName} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: roots}); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
