package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// certValidity is how long the test certificates are valid; NotBefore is an
// hour in the past against clock skew.
const certValidity = 30 * 24 * time.Hour

// keyPair is a certificate and its private key, both PEM encoded.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPEM and keyPEM are the encoded forms written to files and
	// embedded in kubeconfigs.
	certPEM, keyPEM []byte
}

// certSpec is what a leaf certificate says about its holder.
type certSpec struct {
	cn     string
	orgs   []string
	server bool // server auth (with the SANs) instead of client auth
	ips    []net.IP
	dns    []string
}

// newCA makes a self-signed ECDSA P-256 certificate authority.
func newCA() (*keyPair, error) {
	return newCert(nil, certSpec{cn: "skiff-test-ca"})
}

// newCert makes an ECDSA P-256 key and a certificate for spec signed by ca,
// or a self-signed CA certificate when ca is nil.
func newCert(ca *keyPair, spec certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key for %s: %w", spec.cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("serial for %s: %w", spec.cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		IPAddresses:  spec.ips,
		DNSNames:     spec.dns,
	}
	parent, signer := tmpl, crypto.Signer(key)
	switch {
	case ca == nil:
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	case spec.server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		parent, signer = ca.cert, ca.key
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", spec.cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", spec.cn, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("key for %s: %w", spec.cn, err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// write stores the pair as dir/name.crt and dir/name.key (0600).
func (kp *keyPair) write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.certPEM, 0o644); err != nil {
		return fmt.Errorf("write %s certificate: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), kp.keyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s key: %w", name, err)
	}
	return nil
}

// writeServiceAccountKey writes the RSA key pair that signs (sa.key,
// PKCS#1) and verifies (sa.pub, PKIX) service account tokens.
func writeServiceAccountKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), priv, 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	if err := os.WriteFile(filepath.Join(dir, "sa.pub"), pubPEM, 0o644); err != nil {
		return fmt.Errorf("write service account public key: %w", err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for server with the CA and the
// client pair embedded.
func writeKubeconfig(path, server string, ca, client *keyPair, user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["skiff-test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.certPEM, ClientKeyData: client.keyPEM}
	cfg.Contexts["skiff-test"] = &clientcmdapi.Context{Cluster: "skiff-test", AuthInfo: user}
	cfg.CurrentContext = "skiff-test"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// servingIPs are the IP SANs of the API server's certificate: loopback,
// the kubernetes service's ClusterIP and the advertised address.
func (c *Cluster) servingIPs() []net.IP {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)}
	if a := net.ParseIP(c.cfg.AdvertiseAddress); a != nil {
		ips = append(ips, a)
	}
	return ips
}

// writePKI writes into Dir the CA (ca.crt, ca.key), the API server's
// serving pair (apiserver.*) and kubelet client pair
// (apiserver-kubelet-client.*), the aggregation layer's front proxy CA and
// client pair (front-proxy-ca.*, front-proxy-client.*), the service account keys (sa.key, sa.pub),
// and a kubeconfig with embedded credentials for the admin, the controller
// manager, the scheduler and each node.
func (c *Cluster) writePKI() error {
	dir := c.cfg.Dir
	ca, err := newCA()
	if err != nil {
		return err
	}
	serving, err := newCert(ca, certSpec{
		cn: "kube-apiserver", server: true,
		ips: c.servingIPs(),
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return err
	}
	kubeletClient, err := newCert(ca, certSpec{cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}})
	if err != nil {
		return err
	}
	// The aggregation layer's front proxy (an API service such as
	// metrics-server trusts requests signed by its own CA).
	frontProxyCA, err := newCert(nil, certSpec{cn: "skiff-test-front-proxy-ca"})
	if err != nil {
		return err
	}
	frontProxyClient, err := newCert(frontProxyCA, certSpec{cn: "front-proxy-client"})
	if err != nil {
		return err
	}
	for name, kp := range map[string]*keyPair{"ca": ca, "apiserver": serving, "apiserver-kubelet-client": kubeletClient,
		"front-proxy-ca": frontProxyCA, "front-proxy-client": frontProxyClient} {
		if err := kp.write(dir, name); err != nil {
			return err
		}
	}
	if err := writeServiceAccountKey(dir); err != nil {
		return err
	}
	users := []struct{ file, cn, org string }{
		{"admin.kubeconfig", "kubernetes-admin", "system:masters"},
		{"controller-manager.kubeconfig", "system:kube-controller-manager", ""},
		{"scheduler.kubeconfig", "system:kube-scheduler", ""},
	}
	for _, n := range c.cfg.NodeNames {
		users = append(users, struct{ file, cn, org string }{nodeKubeconfig(n), "system:node:" + n, "system:nodes"})
	}
	for _, u := range users {
		spec := certSpec{cn: u.cn}
		if u.org != "" {
			spec.orgs = []string{u.org}
		}
		kp, err := newCert(ca, spec)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(filepath.Join(dir, u.file), c.Server(), ca, kp, u.cn); err != nil {
			return err
		}
	}
	return nil
}
