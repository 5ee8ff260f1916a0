package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

// TestServiceAccountKey (issue 17, serviceaccounts/token): the signing key
// is created at first start as pki/sa.key (0600) with pki/sa.pub, is an EC
// key whose public half is sa.pub, and is the same key on the next start.
func TestServiceAccountKey(t *testing.T) {
	dir := t.TempDir()
	b, err := EnsureBundle(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(saKeyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("sa.key mode %v, want 0600", fi.Mode().Perm())
	}
	kb, _ := pem.Decode(b.ServiceAccountKey)
	if kb == nil {
		t.Fatal("no PEM in ServiceAccountKey")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := os.ReadFile(saPubPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := pem.Decode(pubPEM)
	pub, err := x509.ParsePKIXPublicKey(pb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !key.PublicKey.Equal(pub) {
		t.Error("sa.pub is not sa.key's public key")
	}
	again, err := EnsureBundle(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.ServiceAccountKey, b.ServiceAccountKey) {
		t.Error("the service-account key changed across starts")
	}
}
