// Package pki creates, once, the shim's certificate authority, serving
// certificate and admin credentials under a data directory, and loads them
// on later starts.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// LoopbackServerName is the name the generic apiserver's loopback client
// expects in the serving certificate.
const LoopbackServerName = "apiserver-loopback-client"

// validity of generated certificates. TODO: rotation.
const validity = 10 * 365 * 24 * time.Hour

// Bundle is the shim's PKI, PEM-encoded.
type Bundle struct {
	CACert, CAKey           []byte
	ServingCert, ServingKey []byte
	AdminToken              string
	// ServiceAccountKey signs service-account tokens (PEM, EC P-256);
	// its public half is beside it in sa.pub, as kubeadm's.
	ServiceAccountKey []byte
}

// Paths of the files under a data directory.
func caCertPath(dir string) string      { return filepath.Join(dir, "pki", "ca.crt") }
func caKeyPath(dir string) string       { return filepath.Join(dir, "pki", "ca.key") }
func servingCertPath(dir string) string { return filepath.Join(dir, "pki", "apiserver.crt") }
func servingKeyPath(dir string) string  { return filepath.Join(dir, "pki", "apiserver.key") }

func saKeyPath(dir string) string { return filepath.Join(dir, "pki", "sa.key") }
func saPubPath(dir string) string { return filepath.Join(dir, "pki", "sa.pub") }

// TokenPath is the admin bearer token's file.
func TokenPath(dir string) string { return filepath.Join(dir, "admin.token") }

// EnsureBundle loads the PKI under dataDir, creating what is missing: a CA,
// a serving certificate for hosts (names and IPs) signed by it, the
// admin token and the service-account signing key. Files are written 0600 (certificates 0644).
func EnsureBundle(dataDir string, hosts []string) (*Bundle, error) {
	if err := os.MkdirAll(filepath.Join(dataDir, "pki"), 0o700); err != nil {
		return nil, err
	}
	b := &Bundle{}
	var err error
	var caKey crypto.Signer
	var caCert *x509.Certificate
	b.CACert, b.CAKey, err = readPair(caCertPath(dataDir), caKeyPath(dataDir))
	switch {
	case errors.Is(err, os.ErrNotExist):
		caCert, caKey, err = newCert(nil, nil, pkix.Name{CommonName: "skiff-ca"}, nil, true)
		if err != nil {
			return nil, err
		}
		if b.CACert, b.CAKey, err = writePair(caCertPath(dataDir), caKeyPath(dataDir), caCert, caKey); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if caCert, caKey, err = parsePair(b.CACert, b.CAKey); err != nil {
			return nil, fmt.Errorf("CA in %s: %w", dataDir, err)
		}
	}
	if b.ServingCert, b.ServingKey, err = ensureServing(dataDir, caCert, caKey, hosts); err != nil {
		return nil, err
	}
	token, err := os.ReadFile(TokenPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		token = []byte(hex.EncodeToString(raw))
		if err := writeFile(TokenPath(dataDir), token, 0o600); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	b.AdminToken = string(token)
	if b.ServiceAccountKey, err = ensureServiceAccountKey(dataDir); err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	return b, nil
}

// ensureServing loads the serving certificate and key under dataDir, or
// issues them with caCert for the loopback names, the kubernetes Service's
// names and hosts when they are missing, unreadable, not a pair, not
// signed by caCert, or do not name every one of those (a host added
// since, such as the kubernetes Service's cluster IP): clients trusting
// the CA keep trusting the new one.
func ensureServing(dataDir string, caCert *x509.Certificate, caKey crypto.Signer, hosts []string) (certPEM, keyPEM []byte, err error) {
	hosts = append([]string{"localhost", "127.0.0.1", "::1", LoopbackServerName,
		"kubernetes", "kubernetes.default", "kubernetes.default.svc"}, hosts...)
	certPEM, keyPEM, err = readPair(servingCertPath(dataDir), servingKeyPath(dataDir))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, nil, err
	case usable(certPEM, keyPEM, caCert, hosts):
		return certPEM, keyPEM, nil
	}
	cert, key, err := newCert(caCert, caKey, pkix.Name{CommonName: "skiff-apiserver"}, hosts, false)
	if err != nil {
		return nil, nil, err
	}
	return writePair(servingCertPath(dataDir), servingKeyPath(dataDir), cert, key)
}

// usable reports whether certPEM and keyPEM are a pair, the certificate
// signed by ca and naming every one of hosts.
func usable(certPEM, keyPEM []byte, ca *x509.Certificate, hosts []string) bool {
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return false
	}
	cert, _, err := parsePair(certPEM, keyPEM)
	if err != nil || cert.CheckSignatureFrom(ca) != nil {
		return false
	}
	return covers(cert, hosts)
}

// covers reports whether cert names every one of hosts ("" counts as
// named) among its IP addresses or DNS names, as newCert puts them there.
func covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if h != "" && !slices.ContainsFunc(cert.IPAddresses, net.ParseIP(h).Equal) &&
			!slices.ContainsFunc(cert.DNSNames, func(n string) bool { return strings.EqualFold(n, h) }) {
			return false
		}
	}
	return true
}

// ensureServiceAccountKey loads <dataDir>/pki/sa.key, creating it (0600)
// with sa.pub (0644) at first start. The key is kept across restarts:
// tokens signed before a restart stay valid.
func ensureServiceAccountKey(dataDir string) ([]byte, error) {
	keyPEM, err := os.ReadFile(saKeyPath(dataDir))
	if err == nil {
		if kb, _ := pem.Decode(keyPEM); kb == nil {
			return nil, fmt.Errorf("%s: no PEM data", saKeyPath(dataDir))
		}
		return keyPEM, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	if err := writeFile(saPubPath(dataDir), pubPEM, 0o644); err != nil {
		return nil, err
	}
	if err := writeFile(saKeyPath(dataDir), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return keyPEM, nil
}

// newCert returns a certificate for subject signed by parent (self-signed
// when parent is nil), with a fresh P-256 key.
func newCert(parent *x509.Certificate, parentKey crypto.Signer, subject pkix.Name, hosts []string, isCA bool) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	if isCA {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// ClientCert returns a client certificate and key (PEM) signed by the CA:
// user name cn, groups orgs.
func (b *Bundle) ClientCert(cn string, orgs ...string) (certPEM, keyPEM []byte, err error) {
	caCert, caKey, err := parsePair(b.CACert, b.CAKey)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func readPair(certPath, keyPath string) ([]byte, []byte, error) {
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, err
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func writePair(certPath, keyPath string, cert *x509.Certificate, key crypto.Signer) ([]byte, []byte, error) {
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected key type %T", key)
	}
	keyDER, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		return nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("no PEM data")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// writeFile writes data to path atomically (temp file and rename).
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
