package registries

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// certFiles writes placeholder ca.pem, cert.pem and key.pem into dir
// (validation only checks that they exist).
func certFiles(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	certFiles(t, dir)
	tests := []struct {
		name, yaml string
		wantErrs   []string // each must appear in the error
	}{
		{name: "unknown top-level field", yaml: "mirror:\n  docker.io: {}\n", wantErrs: []string{`unknown field "mirror"`}},
		{name: "unknown nested field", yaml: "configs:\n  a.io:\n    tls:\n      ca: x\n", wantErrs: []string{`unknown field "ca"`}},
		{name: "k3s rewrite not supported", yaml: "mirrors:\n  docker.io:\n    rewrite: {a: b}\n", wantErrs: []string{`unknown field "rewrite"`}},
		{name: "duplicate key", yaml: "mirrors:\n  a.io: {}\n  a.io: {}\n", wantErrs: []string{`key "a.io" already set`}},
		// 0. and 0 would both become "0", one of them at random.
		{name: "key not a string", yaml: "configs:\n  0.:\n    tls: {insecure_skip_verify: true}\n  0:\n", wantErrs: []string{`line 2: key "0." is not a string (!!float); quote it`}},
		{name: "port as a key", yaml: "mirrors:\n  5000: {}\n", wantErrs: []string{`line 2: key "5000" is not a string (!!int)`}},
		{name: "mirror host with scheme", yaml: "mirrors:\n  https://a.io:\n    endpoint: [https://m.io]\n", wantErrs: []string{`mirrors["https://a.io"]: "https://a.io" is not a host[:port]`}},
		{name: "mirror host with path", yaml: "mirrors:\n  a.io/x: {}\n", wantErrs: []string{`mirrors["a.io/x"]`}},
		{name: "endpoint without scheme", yaml: "mirrors:\n  a.io:\n    endpoint: [m.io]\n", wantErrs: []string{`mirrors["a.io"].endpoint[0]: "m.io": want an https://`}},
		{name: "http endpoint not loopback", yaml: "mirrors:\n  a.io:\n    endpoint: [\"https://ok.io\", \"http://10.0.0.1:5000\"]\n", wantErrs: []string{`mirrors["a.io"].endpoint[1]: "http://10.0.0.1:5000": plain http is allowed only for a loopback host`}},
		{name: "endpoint with credentials in URL", yaml: "mirrors:\n  a.io:\n    endpoint: [\"https://u:p@m.io\"]\n", wantErrs: []string{`want scheme://host`}},
		{name: "IPv6 endpoint", yaml: "mirrors:\n  a.io:\n    endpoint: [\"http://[::1]:5000\"]\n", wantErrs: []string{`mirrors["a.io"].endpoint[0]: "[::1]:5000": IPv6 literals are not supported`}},
		{name: "IPv6 config host", yaml: "configs:\n  \"[::1]:5000\":\n    auth: {username: u}\n", wantErrs: []string{`configs["[::1]:5000"]: "[::1]:5000": IPv6`}},
		{name: "configs star", yaml: "configs:\n  \"*\":\n    auth: {username: u, password: p}\n", wantErrs: []string{`configs["*"]: "*" is not supported`}},
		{name: "insecure not loopback", yaml: "configs:\n  reg.example:5000:\n    tls: {insecure_skip_verify: true}\n", wantErrs: []string{`configs["reg.example:5000"].tls: insecure_skip_verify is allowed only for a loopback host`}},
		{name: "cert without key", yaml: "configs:\n  a.io:\n    tls: {cert_file: cert.pem}\n", wantErrs: []string{`cert_file and key_file go together`}},
		{name: "missing ca file", yaml: "configs:\n  a.io:\n    tls: {ca_file: nope.pem}\n", wantErrs: []string{`configs["a.io"].tls: ca_file: stat ` + filepath.Join(dir, "nope.pem")}},
		{name: "ca is a directory", yaml: "configs:\n  a.io:\n    tls: {ca_file: " + dir + "}\n", wantErrs: []string{`is a directory`}},
		{name: "two auth kinds", yaml: "configs:\n  a.io:\n    auth: {username: u, password: p, identitytoken: t}\n", wantErrs: []string{`give one of username/password, auth or identitytoken`}},
		{name: "empty auth", yaml: "configs:\n  a.io:\n    auth: {}\n", wantErrs: []string{`give one of`}},
		{name: "password only", yaml: "configs:\n  a.io:\n    auth: {password: p}\n", wantErrs: []string{`password without username`}},
		{name: "bad base64 auth", yaml: "configs:\n  a.io:\n    auth: {auth: \"!!\"}\n", wantErrs: []string{`auth: not base64`}},
		{name: "every problem reported", yaml: "mirrors:\n  a.io:\n    endpoint: [ftp://x]\nconfigs:\n  b.io:\n    tls: {insecure_skip_verify: true, key_file: key.pem}\n",
			wantErrs: []string{`endpoint[0]`, `insecure_skip_verify`, `cert_file and key_file`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), dir)
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErrs)
			}
			for _, w := range tt.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registries.yaml")
	if err := os.WriteFile(path, []byte("mirrors:\n  docker.io:\n    endpoints: [https://m.io]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `unknown field "endpoints"`) {
		t.Errorf("err = %v, want the file and the field", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestParseValid(t *testing.T) {
	dir := t.TempDir()
	certFiles(t, dir)
	f, err := Parse([]byte(`
mirrors:
  docker.io:
    endpoint: ["https://127.0.0.1:5443", "http://localhost:5000", "http://127.0.0.2:5001/v2/hub"]
  "*":
    endpoint: ["https://mirror.example:5000"]
configs:
  "127.0.0.1:5443":
    auth: {username: user, password: pass}
    tls: {ca_file: ca.pem, cert_file: cert.pem, key_file: `+filepath.Join(dir, "key.pem")+`, insecure_skip_verify: true}
  mirror.example:5000:
    auth: {auth: dXNlcjpwYXNz}
  docker.io:
    auth: {identitytoken: tok}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	tls := f.Configs["127.0.0.1:5443"].TLS
	if tls.CAFile != filepath.Join(dir, "ca.pem") || tls.CertFile != filepath.Join(dir, "cert.pem") || tls.KeyFile != filepath.Join(dir, "key.pem") {
		t.Errorf("paths not made absolute against the file's directory: %+v", tls)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:5000": true, "127.0.0.1": true, "127.1.2.3:443": true,
		"[::1]:5000": true, "::1": true, "10.0.0.1": false, "localhost.example": false, "example.com:5000": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
