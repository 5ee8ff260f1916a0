package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
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

// TestServingCertificateRepaired: a serving certificate that cannot be
// read, or is not signed by the data directory's CA, is issued again
// rather than stopping the start.
func TestServingCertificateRepaired(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureBundle(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(servingCertPath(dir), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixed, err := EnsureBundle(dir, nil)
	if err != nil || bytes.Equal(fixed.ServingCert, first.ServingCert) || !bytes.Equal(fixed.CACert, first.CACert) {
		t.Fatalf("corrupt certificate: %v; want a new one from the same CA", err)
	}
	other, err := EnsureBundle(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{servingCertPath(dir): other.ServingCert, servingKeyPath(dir): other.ServingKey} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again, err := EnsureBundle(dir, nil)
	if err != nil || bytes.Equal(again.ServingCert, other.ServingCert) {
		t.Fatalf("another CA's certificate: %v; want a new one", err)
	}
	if err := parseCert(t, again.ServingCert).CheckSignatureFrom(parseCert(t, first.CACert)); err != nil {
		t.Errorf("the new certificate: %v", err)
	}
}
