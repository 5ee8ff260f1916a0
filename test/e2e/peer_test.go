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
	"strconv"
	"strings"
	"syscall"
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
// network namespace of the test's own, held by a process of its own (not
// `ip netns add`, whose bind mount of /run/netns would keep containerd
// from removing its pods' namespaces there), linked to this machine by a
// veth pair. Its requests to peerHostIP reach this machine from a
// non-loopback address.
type networkPeer struct {
	nsPath string
}

// newNetworkPeer creates the peer (root); its cleanup removes it.
func newNetworkPeer(t *testing.T) *networkPeer {
	t.Helper()
	run := func(name string, args ...string) error {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	_ = run("ip", "link", "del", peerLink) // a peer an earlier, killed run left
	holder := exec.Command("unshare", "--net", "sleep", "3600")
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		t.Fatalf("network peer: %v", err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
		_ = run("ip", "link", "del", peerLink) // gone with the namespace, normally
	})
	p := &networkPeer{nsPath: fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)}
	// unshare has made the namespace once it execs sleep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		self, err1 := os.Readlink("/proc/self/ns/net")
		ns, err2 := os.Readlink(p.nsPath)
		if err1 == nil && err2 == nil && self != ns {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", holder.Process.Pid)); strings.HasSuffix(exe, "/sleep") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("network peer: no network namespace of its own: %v %v", err1, err2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	inPeer := func(args ...string) []string { return append([]string{"--net=" + p.nsPath, "ip"}, args...) }
	for _, cmd := range [][]string{
		{"ip", "link", "add", peerLink, "type", "veth", "peer", "name", "eth0", "netns", strconv.Itoa(holder.Process.Pid)},
		{"ip", "addr", "add", peerHostIP + "/30", "dev", peerLink},
		{"ip", "link", "set", peerLink, "up"},
		append([]string{"nsenter"}, inPeer("addr", "add", peerIP+"/30", "dev", "eth0")...),
		append([]string{"nsenter"}, inPeer("link", "set", "eth0", "up")...),
		append([]string{"nsenter"}, inPeer("link", "set", "lo", "up")...),
	} {
		if err := run(cmd[0], cmd[1:]...); err != nil {
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
	target, err := os.Open(p.nsPath)
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("enter %s: %w", p.nsPath, err)
	}
	conn, dialErr := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		panic(fmt.Sprintf("leave network namespace %s: %v", p.nsPath, err)) // the thread stays locked and dies
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
