package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// ServingCertFiles returns the certificate and key files the kubelet API
// serves, as the kubelet's InitializeTLS: certFile and keyFile when given
// (--tls-cert-file, --tls-private-key-file: both or neither), else
// <certDir>/kubelet.crt and kubelet.key, which are generated when they
// cannot both be read (a self-signed CA and a serving certificate for
// host, the node name, valid for a year) and reused as they are
// afterwards.
func ServingCertFiles(certFile, keyFile, certDir, host string) (string, string, error) {
	if (certFile == "") != (keyFile == "") {
		return "", "", errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	}
	if certFile != "" {
		return certFile, keyFile, nil
	}
	certFile, keyFile = filepath.Join(certDir, "kubelet.crt"), filepath.Join(certDir, "kubelet.key")
	// An error means only one of the pair is readable (the kubelet stops
	// there): that pair is useless, so both are generated again.
	if ok, err := certutil.CanReadCertAndKey(certFile, keyFile); ok && err == nil {
		return certFile, keyFile, nil
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", "", fmt.Errorf("--cert-dir: %w", err)
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return "", "", fmt.Errorf("generate self-signed serving certificate: %w", err)
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return "", "", fmt.Errorf("write serving key: %w", err)
	}
	if err := certutil.WriteCert(certFile, cert); err != nil {
		return "", "", fmt.Errorf("write serving certificate: %w", err)
	}
	return certFile, keyFile, nil
}

// NewTLSConfig returns the kubelet API's TLS configuration: the serving
// certificate and key from their files, and, with clientCAs
// (--client-ca-file), client certificates requested but not required: the
// Authenticator verifies them, so a client without one can still use a
// bearer token or be anonymous.
func NewTLSConfig(certFile, keyFile string, clientCAs *x509.CertPool) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load serving certificate: %w", err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	if clientCAs != nil {
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg, nil
}

// LoadClientCAs reads a PEM bundle of CA certificates (--client-ca-file).
func LoadClientCAs(path string) (*x509.CertPool, error) {
	pool, err := certutil.NewPool(path)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	return pool, nil
}
