package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestNodeKubeconfig (issue 17 security, node credentials): a node
// kubeconfig carries a CA-signed client certificate for
// system:node:<name> in system:nodes, is 0600, keeps its certificate
// across calls for the same node and is re-issued when the name changes.
func TestNodeKubeconfig(t *testing.T) {
	dir := t.TempDir()
	b, err := EnsureBundle(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func() (*x509.Certificate, []byte, string) {
		t.Helper()
		cfg, err := clientcmd.LoadFromFile(NodeKubeconfigPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
		block, _ := pem.Decode(auth.ClientCertificateData)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert, auth.ClientCertificateData, cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
	}

	path, err := EnsureNodeKubeconfig(dir, "https://127.0.0.1:1", b, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("node kubeconfig: %v %v", err, st)
	}
	cert, first, _ := read()
	if cert.Subject.CommonName != "system:node:node-a" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("subject %v", cert.Subject)
	}
	caCert, _, _ := parsePair(b.CACert, b.CAKey)
	if err := cert.CheckSignatureFrom(caCert); err != nil {
		t.Fatalf("not signed by the CA: %v", err)
	}

	if _, err := EnsureNodeKubeconfig(dir, "https://127.0.0.1:2", b, "node-a"); err != nil {
		t.Fatal(err)
	}
	if _, again, server := read(); !bytes.Equal(again, first) || server != "https://127.0.0.1:2" {
		t.Errorf("same node: certificate re-issued (%v) or server not updated (%s)", !bytes.Equal(again, first), server)
	}

	if _, err := EnsureNodeKubeconfig(dir, "https://127.0.0.1:2", b, "node-b"); err != nil {
		t.Fatal(err)
	}
	if cert, _, _ := read(); cert.Subject.CommonName != "system:node:node-b" {
		t.Errorf("renamed node: CN %q", cert.Subject.CommonName)
	}
	if _, err := EnsureNodeKubeconfig(dir, "https://127.0.0.1:2", b, ""); err == nil {
		t.Error("empty node name accepted")
	}
}
