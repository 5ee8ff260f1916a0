package registries

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name      string
		file      File
		wantHosts map[string]string
		wantAuths map[string]Auth
	}{
		{name: "empty", file: File{}, wantHosts: map[string]string{}, wantAuths: map[string]Auth{}},
		{
			name: "mirrors in order, star as _default, no server without TLS",
			file: File{Mirrors: map[string]Mirror{
				"docker.io": {Endpoints: []string{"https://m1.example", "http://127.0.0.1:5000"}},
				"*":         {Endpoints: []string{"https://all.example:5000"}},
			}},
			wantHosts: map[string]string{
				"docker.io": `# Written by skiff from its registries file; changes are overwritten on start.

[host."https://m1.example"]
  capabilities = ["pull", "resolve"]

[host."http://127.0.0.1:5000"]
  capabilities = ["pull", "resolve"]
`,
				"_default": `# Written by skiff from its registries file; changes are overwritten on start.

[host."https://all.example:5000"]
  capabilities = ["pull", "resolve"]
`,
			},
			wantAuths: map[string]Auth{},
		},
		{
			name: "TLS of the registry and of its mirror; auth; docker.io auth aliased",
			file: File{
				Mirrors: map[string]Mirror{"reg.example": {Endpoints: []string{"https://127.0.0.1:5443", "http://localhost:5000"}}},
				Configs: map[string]Config{
					"reg.example":    {TLS: &TLS{CAFile: "/etc/reg-ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem"}},
					"127.0.0.1:5443": {TLS: &TLS{CAFile: `/odd "dir"\ca.pem`, InsecureSkipVerify: true}, Auth: &Auth{Username: "u", Password: "p"}},
					"localhost:5000": {TLS: &TLS{InsecureSkipVerify: true}},
					"docker.io":      {Auth: &Auth{Auth: "dTpw"}},
				},
			},
			wantHosts: map[string]string{
				"reg.example": `# Written by skiff from its registries file; changes are overwritten on start.
server = "https://reg.example"
ca = "/etc/reg-ca.pem"
client = [["/c.pem", "/k.pem"]]

[host."https://127.0.0.1:5443"]
  capabilities = ["pull", "resolve"]
  ca = "/odd \"dir\"\\ca.pem"
  skip_verify = true

[host."http://localhost:5000"]
  capabilities = ["pull", "resolve"]
`,
				"127.0.0.1:5443": `# Written by skiff from its registries file; changes are overwritten on start.
server = "https://127.0.0.1:5443"
ca = "/odd \"dir\"\\ca.pem"
skip_verify = true

[host]
`,
				"localhost:5000": `# Written by skiff from its registries file; changes are overwritten on start.
server = "https://localhost:5000"
skip_verify = true

[host]
`,
			},
			wantAuths: map[string]Auth{
				"127.0.0.1:5443":       {Username: "u", Password: "p"},
				"docker.io":            {Auth: "dTpw"},
				"registry-1.docker.io": {Auth: "dTpw"},
			},
		},
		{
			name:      "docker.io TLS points server at registry-1.docker.io",
			file:      File{Configs: map[string]Config{"docker.io": {TLS: &TLS{CAFile: "/ca.pem"}}}},
			wantHosts: map[string]string{"docker.io": "# Written by skiff from its registries file; changes are overwritten on start.\nserver = \"https://registry-1.docker.io\"\nca = \"/ca.pem\"\n\n[host]\n"},
			wantAuths: map[string]Auth{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.file.Render()
			if len(r.Hosts) != len(tt.wantHosts) {
				t.Errorf("hosts dirs = %v, want %v", keys(r.Hosts), keys(tt.wantHosts))
			}
			for dir, want := range tt.wantHosts {
				if got := r.Hosts[dir]; got != want {
					t.Errorf("%s/hosts.toml:\n%s\nwant:\n%s", dir, got, want)
				}
			}
			if len(r.Auths) != len(tt.wantAuths) {
				t.Errorf("auths = %v, want %v", r.Auths, tt.wantAuths)
			}
			for host, want := range tt.wantAuths {
				if got := r.Auths[host]; got != want {
					t.Errorf("auth %s = %+v, want %+v", host, got, want)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// TestRenderedHostsAsContainerdReadsThem feeds the rendered files to
// containerd's own hosts.toml reader (remotes/docker/config, the code the
// CRI plugin runs with config_path set) and checks what it would contact.
func TestRenderedHostsAsContainerdReadsThem(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestCerts(t, dir)
	f := File{
		Mirrors: map[string]Mirror{
			"docker.io": {Endpoints: []string{"https://127.0.0.1:5443", "http://localhost:5000/hub"}},
			"*":         {Endpoints: []string{"https://all.example"}},
		},
		Configs: map[string]Config{
			"127.0.0.1:5443": {TLS: &TLS{CAFile: ca, CertFile: cert, KeyFile: key}},
			"127.0.0.1:6443": {TLS: &TLS{InsecureSkipVerify: true}},
		},
	}
	certsD := filepath.Join(dir, "certs.d")
	for d, content := range f.Render().Hosts {
		if err := os.MkdirAll(filepath.Join(certsD, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certsD, d, "hosts.toml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hosts := config.ConfigureHosts(context.Background(), config.HostOptions{HostDir: config.HostDirFromRoot(certsD)})
	type want struct {
		url        string // scheme://host/path
		skipVerify bool
		ca, client bool
	}
	for ns, wants := range map[string][]want{
		"docker.io": {
			{url: "https://127.0.0.1:5443/v2", ca: true, client: true},
			{url: "http://localhost:5000/hub/v2"}, // containerd appends /v2 to a path without it
			{url: "https://registry-1.docker.io/v2"},
		},
		"quay.io":        {{url: "https://all.example/v2"}, {url: "https://quay.io/v2"}},
		"127.0.0.1:5443": {{url: "https://127.0.0.1:5443/v2", ca: true, client: true}},
		"127.0.0.1:6443": {{url: "https://127.0.0.1:6443/v2", skipVerify: true}},
	} {
		got, err := hosts(ns)
		if err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
		if len(got) != len(wants) {
			t.Errorf("%s: %d hosts, want %d: %+v", ns, len(got), len(wants), got)
			continue
		}
		for i, w := range wants {
			h := got[i]
			if u := h.Scheme + "://" + h.Host + h.Path; u != w.url {
				t.Errorf("%s host %d: %s, want %s", ns, i, u, w.url)
			}
			if isMirror := i < len(wants)-1; isMirror && h.Capabilities != docker.HostCapabilityPull|docker.HostCapabilityResolve {
				t.Errorf("%s host %d: capabilities %b, want pull and resolve", ns, i, h.Capabilities)
			}
			tr, _ := h.Client.Transport.(*http.Transport)
			if tr == nil || tr.TLSClientConfig == nil {
				t.Fatalf("%s host %d: no TLS config", ns, i)
			}
			tc := tr.TLSClientConfig
			if tc.InsecureSkipVerify != w.skipVerify || (tc.RootCAs != nil) != w.ca || (len(tc.Certificates) > 0) != w.client {
				t.Errorf("%s host %d (%s): skipVerify=%v ca=%v client=%v, want %+v", ns, i, w.url, tc.InsecureSkipVerify, tc.RootCAs != nil, len(tc.Certificates) > 0, w)
			}
		}
	}
}

// writeTestCerts writes a self-signed CA certificate and a client key pair.
func writeTestCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skiff test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	for path, data := range map[string][]byte{ca: certPEM, cert: certPEM, key: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(string(certPEM), "-----BEGIN CERTIFICATE") {
		t.Fatal("bad PEM")
	}
	return ca, cert, key
}
