package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The shim's identity towards kubelets, as kubeadm issues it
// (cmd/kubeadm/app/constants: APIServerKubeletClientCertCommonName,
// the system:masters organization): a client certificate signed by the
// shim's CA, so that a kubelet whose --client-ca-file is that CA
// authenticates the shim.
const (
	KubeletClientCommonName   = "kube-apiserver-kubelet-client"
	KubeletClientOrganization = "system:masters"
)

// KubeletClientCertPath and KubeletClientKeyPath are the files of the
// kubelet client certificate under a data directory (kubeadm's names).
func KubeletClientCertPath(dataDir string) string {
	return filepath.Join(dataDir, "pki", "apiserver-kubelet-client.crt")
}

// KubeletClientKeyPath is the kubelet client certificate's key.
func KubeletClientKeyPath(dataDir string) string {
	return filepath.Join(dataDir, "pki", "apiserver-kubelet-client.key")
}

// EnsureKubeletClientCert returns the shim's kubelet client certificate
// under dataDir (key 0600, certificate 0644): the existing one when it is
// KubeletClientCommonName's and verifies against b's CA, else a new one.
// Not safe for concurrent calls on one directory.
func EnsureKubeletClientCert(dataDir string, b *Bundle) (tls.Certificate, error) {
	certPath, keyPath := KubeletClientCertPath(dataDir), KubeletClientKeyPath(dataDir)
	certPEM, keyPEM, err := readPair(certPath, keyPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("kubelet client certificate: %w", err)
	}
	if err != nil || !issuedBy(certPEM, b, KubeletClientCommonName) {
		if certPEM, keyPEM, err = b.ClientCert(KubeletClientCommonName, KubeletClientOrganization); err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet client certificate: %w", err)
		}
		if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
			return tls.Certificate{}, err
		}
		if err := writeFile(certPath, certPEM, 0o644); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// issuedBy reports whether certPEM is a client certificate for cn that
// verifies against b's CA.
func issuedBy(certPEM []byte, b *Bundle, cn string) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != cn {
		return false
	}
	caCert, _, err := parsePair(b.CACert, b.CAKey)
	if err != nil {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}
