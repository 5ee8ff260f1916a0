package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func selfSignedPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:n1"},
		NotBefore: time.Unix(0, 0), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})...)
}

// TestBootstrapKubeconfig_H1: the written kubeconfig keeps the bootstrap
// server and CA and uses the issued certificate; a kubeconfig whose
// certificate is missing or expired asks for a new bootstrap.
func TestBootstrapKubeconfig_H1(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubelet.kubeconfig")
	now := time.Now()
	if ok, err := kubeconfigCertValid(kc, now); ok || err != nil {
		t.Fatalf("missing kubeconfig: valid %t err %v", ok, err)
	}
	pemPath := filepath.Join(dir, "kubelet-client-current.pem")
	if err := os.WriteFile(pemPath, selfSignedPEM(t, now.Add(time.Hour)), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, selfSignedPEM(t, now.Add(time.Hour)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := nodeKubeconfig(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: ca}}, pemPath)
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	if ok, err := kubeconfigCertValid(kc, now); !ok || err != nil {
		t.Fatalf("fresh certificate: valid %t err %v", ok, err)
	}
	if ok, _ := kubeconfigCertValid(kc, now.Add(2*time.Hour)); ok {
		t.Error("an expired certificate counts as valid")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil || rc.Host != "https://127.0.0.1:6443" || rc.CAFile != ca || rc.CertFile != pemPath || rc.KeyFile != pemPath {
		t.Errorf("kubeconfig %+v %v", rc, err)
	}
	if err := os.Remove(pemPath); err != nil {
		t.Fatal(err)
	}
	if ok, _ := kubeconfigCertValid(kc, now); ok {
		t.Error("a removed certificate counts as valid")
	}
}

// TestCertRotatorFiles_H1: --rotate-certificates needs the certificate and
// key in one file; the rotator reads the certificate in use from it and
// replaces the pair in it.
func TestCertRotatorFiles_H1(t *testing.T) {
	dir := t.TempDir()
	pemPath := filepath.Join(dir, "kubelet-client-current.pem")
	if _, err := certRotator(pemPath, filepath.Join(dir, "key.pem"), nil, "n1", nil); err == nil {
		t.Error("separate certificate and key files accepted")
	}
	if _, err := certRotator("", "", nil, "n1", nil); err == nil {
		t.Error("embedded credentials accepted")
	}
	r, err := certRotator(pemPath, pemPath, nil, "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Current(); err == nil {
		t.Error("Current of a missing file: no error")
	}
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	pair := selfSignedPEM(t, exp)
	block, rest := pem.Decode(pair)
	if err := r.Store(pem.EncodeToMemory(block), rest); err != nil {
		t.Fatal(err)
	}
	c, err := r.Current()
	if err != nil || !c.NotAfter.Equal(exp) {
		t.Fatalf("Current = %v, %v; want the stored certificate (expires %v)", c, err, exp)
	}
	if got, _ := os.ReadFile(pemPath); string(got) != string(pair) {
		t.Error("the file does not hold the certificate and the key")
	}
	if info, _ := os.Stat(pemPath); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}
