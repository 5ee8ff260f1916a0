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
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// FuzzCredentialFiles: the credential files the agent reads before it
// talks to anyone are outside input: --kubeconfig and
// --bootstrap-kubeconfig (client-go's loader, then skiff's certificate
// check), the client certificate PEM they name, and the CA bundle of
// --client-ca-file or the kubeconfig. Nothing panics; errors name the
// flag or the file; the node kubeconfig the bootstrap writes from an
// accepted bootstrap kubeconfig loads again with the same server and CA
// and the issued client certificate.
// Run with: go test ./node/ -run '^$' -fuzz '^FuzzCredentialFiles$' -fuzztime 60s
func FuzzCredentialFiles(f *testing.F) {
	certPEM := fuzzCertPEM(f)
	const kc = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:6443\"%s}\n" +
		"users:\n- name: u\n  user: {%s}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	for _, seed := range []struct {
		kubeconfig string
		pem        []byte
	}{
		{strings.Replace(strings.Replace(kc, "%s", ", certificate-authority: client.pem", 1), "%s", "client-certificate: client.pem, client-key: client.pem", 1), certPEM},
		{strings.Replace(strings.Replace(kc, "%s", ", insecure-skip-tls-verify: true", 1), "%s", "token: abc", 1), nil},
		{strings.Replace(strings.Replace(kc, "%s", "", 1), "%s", "client-certificate-data: bm90IGEgY2VydA==", 1), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
		{"apiVersion: v1\nkind: Config\ncurrent-context: nope\n", []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")},
		{"{}", nil},
		{"clusters: [", certPEM[:len(certPEM)/2]},
	} {
		f.Add([]byte(seed.kubeconfig), seed.pem)
	}
	dir := f.TempDir()
	kubeconfig, pemPath := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "client.pem")
	written := filepath.Join(dir, "node.kubeconfig")
	now := time.Now()
	f.Fuzz(func(t *testing.T, kubeconfigData, pemData []byte) {
		if err := os.WriteFile(kubeconfig, kubeconfigData, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pemPath, pemData, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := kubeconfigCertValid(kubeconfig, now); err != nil && !strings.HasPrefix(err.Error(), "--kubeconfig: ") {
			t.Fatalf("kubeconfigCertValid: error %q does not name --kubeconfig", err)
		}
		if _, err := readCertFile(pemPath); err != nil && !strings.Contains(err.Error(), pemPath) {
			t.Fatalf("readCertFile: error %q does not name the file", err)
		}
		o := &KubeletAPIConfig{}
		if _, _, err := o.clientCAs(pemData); err != nil && !strings.Contains(err.Error(), "--client-ca-file") {
			t.Fatalf("clientCAs: error %q does not name --client-ca-file", err)
		}
		o.ClientCAFile = pemPath
		if _, _, err := o.clientCAs(nil); err != nil && !strings.Contains(err.Error(), "--client-ca-file") {
			t.Fatalf("clientCAs: error %q does not name --client-ca-file", err)
		}
		bootstrap, err := loadBootstrapKubeconfig(kubeconfig)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--bootstrap-kubeconfig") {
				t.Fatalf("loadBootstrapKubeconfig: error %q does not name --bootstrap-kubeconfig", err)
			}
			return
		}
		if err := clientcmd.WriteToFile(*nodeKubeconfig(bootstrap, pemPath), written); err != nil {
			t.Fatalf("writing the node kubeconfig: %v", err)
		}
		back, err := clientcmd.BuildConfigFromFlags("", written)
		if err != nil {
			t.Fatalf("the written node kubeconfig does not load: %v", err)
		}
		if back.Host != bootstrap.Host || back.CAFile != bootstrap.CAFile || string(back.CAData) != string(bootstrap.CAData) ||
			back.Insecure != bootstrap.Insecure || back.ServerName != bootstrap.ServerName || back.CertFile != pemPath {
			t.Fatalf("the written node kubeconfig reads back as host %q CA %q/%d bytes, want host %q CA %q/%d bytes",
				back.Host, back.CAFile, len(back.CAData), bootstrap.Host, bootstrap.CAFile, len(bootstrap.CAData))
		}
	})
}

// fuzzCertPEM is a self-signed certificate and its key, in PEM.
func fuzzCertPEM(tb testing.TB) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:n1"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})...)
}

// --bootstrap-kubeconfig's server must be https:// (FuzzCredentialFiles'
// finding, corpus entry bootstrap-server-not-https): client-go reads no
// user of a kubeconfig whose server is not TLS, so the written node
// kubeconfig's client certificate, like the bootstrap token, was silently
// never sent.
func TestBootstrapKubeconfigNeedsHTTPS(t *testing.T) {
	tests := []struct{ server, wantErr string }{
		{"https://127.0.0.1:6443", ""},
		{"HTTPS://api.example:6443/prefix", ""},
		{"http://127.0.0.1:8080", `server "http://127.0.0.1:8080" is not an https:// URL`},
		{"127.0.0.1:6443", `server "127.0.0.1:6443" is not an https:// URL`},
		{"httpsO//127.0.0.1:6443", `server "httpsO//127.0.0.1:6443" is not an https:// URL`},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
			kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + tt.server + "\"}\n" +
				"users:\n- name: u\n  user: {token: abc.0123456789abcdef}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
			if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadBootstrapKubeconfig(path)
			if tt.wantErr == "" {
				if err != nil || cfg.BearerToken == "" {
					t.Fatalf("cfg %v, err %v; want the token and no error", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "--bootstrap-kubeconfig "+path+": "+tt.wantErr) {
				t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}
