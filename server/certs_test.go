package server

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

func certsFromFile(path string) (*x509.CertPool, error) {
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// TestServingCertFiles checks the kubelet's serving certificate choice:
// the given files, else a self-signed certificate for the node generated
// into the cert dir once and reused across restarts.
func TestServingCertFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	certFile, keyFile, err := ServingCertFiles("", "", dir, "node1")
	if err != nil {
		t.Fatal(err)
	}
	if certFile != filepath.Join(dir, "kubelet.crt") || keyFile != filepath.Join(dir, "kubelet.key") {
		t.Fatalf("files = %s, %s; want kubelet.crt and kubelet.key in %s", certFile, keyFile, dir)
	}
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := certs[0].VerifyHostname("node1"); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	first, _ := os.ReadFile(certFile)

	// A restart reuses them.
	if _, _, err := ServingCertFiles("", "", dir, "node1"); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(certFile); !bytes.Equal(first, again) {
		t.Error("certificate regenerated on restart")
	}
	if _, err := NewTLSConfig(certFile, keyFile, nil); err != nil {
		t.Errorf("NewTLSConfig: %v", err)
	}

	// A lost key regenerates both.
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ServingCertFiles("", "", dir, "node1"); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(certFile); bytes.Equal(first, again) {
		t.Error("certificate kept without its key")
	}

	// Given files are used as they are.
	if c, k, err := ServingCertFiles("/etc/x.crt", "/etc/x.key", dir, "node1"); err != nil || c != "/etc/x.crt" || k != "/etc/x.key" {
		t.Errorf("given files: %s, %s, %v", c, k, err)
	}
	if _, _, err := ServingCertFiles("/etc/x.crt", "", dir, "node1"); err == nil {
		t.Error("certificate without key: no error")
	}
}
