package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The network peer's link: this machine's end holds peerHostIP, the
// peer's end (in its own network namespace) peerIP. 198.18.0.0/15 is the
// benchmarking range (RFC 2544): no other host of this machine uses it,
// and the peer is a test host of the suite's own.
const (
	peerHostIP = "198.18.0.1"
	peerIP     = "198.18.0.2"
	peerLink   = "skiffpeer0"
)

// networkPeer is another host on the network, as an attacker would be: a
// network namespace of the test's own, linked to this machine by a veth
// pair. Its requests to peerHostIP reach this machine from a non-loopback
// address.
type networkPeer struct {
	ns string
}

// newNetworkPeer creates the peer (root); its cleanup removes it.
func newNetworkPeer(t *testing.T) *networkPeer {
	t.Helper()
	p := &networkPeer{ns: "skiff-e2e-peer"}
	ipCmd := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	remove := func() {
		_ = ipCmd("link", "del", peerLink)
		_ = ipCmd("netns", "del", p.ns)
	}
	remove() // a peer an earlier, killed run left
	t.Cleanup(remove)
	for _, args := range [][]string{
		{"netns", "add", p.ns},
		{"link", "add", peerLink, "type", "veth", "peer", "name", "eth0", "netns", p.ns},
		{"addr", "add", peerHostIP + "/30", "dev", peerLink},
		{"link", "set", peerLink, "up"},
		{"-n", p.ns, "addr", "add", peerIP + "/30", "dev", "eth0"},
		{"-n", p.ns, "link", "set", "eth0", "up"},
		{"-n", p.ns, "link", "set", "lo", "up"},
	} {
		if err := ipCmd(args...); err != nil {
			t.Fatalf("network peer: %v", err)
		}
	}
	return p
}

// dial connects from inside the peer's network namespace: the socket is
// made there, on a thread that enters the namespace for the call and
// leaves it after (a thread that cannot leave is never reused).
func (p *networkPeer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	goruntime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, err
	}
	defer self.Close()
	target, err := os.Open(filepath.Join("/run/netns", p.ns))
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("enter %s: %w", p.ns, err)
	}
	conn, dialErr := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		panic(fmt.Sprintf("leave network namespace %s: %v", p.ns, err)) // the thread stays locked and dies
	}
	goruntime.UnlockOSThread()
	return conn, dialErr
}

// client is an HTTPS client on the peer, presenting certs, not verifying
// the server (as an API server without --kubelet-certificate-authority).
func (p *networkPeer) client(certs ...tls.Certificate) *http.Client {
	return httpsClient(p.dial, certs...)
}

// httpsClient is an HTTPS client dialing with dial (nil: from this
// machine), presenting certs and not verifying the server.
func httpsClient(dial func(context.Context, string, string) (net.Conn, error), certs ...tls.Certificate) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, Certificates: certs}, //nolint:gosec // kubelets' self-signed certificates
		DisableKeepAlives: true,
		DialContext:       dial,
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// certAuthority signs client certificates, as a cluster's CA does.
type certAuthority struct {
	cert *x509.Certificate
	key  crypto.Signer
	// File is the CA certificate's PEM file.
	File string
}

// loadCA reads a CA's certificate and key (PEM files).
func loadCA(t *testing.T, certFile, keyFile string) *certAuthority {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("CA: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return &certAuthority{cert: cert, key: pair.PrivateKey.(crypto.Signer), File: certFile}
}

// newCA makes a CA and writes its certificate into dir/ca.crt.
func newCA(t *testing.T, dir string) *certAuthority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skiff-e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return &certAuthority{cert: cert, key: key, File: file}
}

// clientCert is a client certificate of user cn in groups orgs.
func (ca *certAuthority) clientCert(t *testing.T, cn string, orgs ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
