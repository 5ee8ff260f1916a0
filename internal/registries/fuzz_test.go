package registries

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: the registries file is outside input (an operator's file,
// maybe copied from k3s). Parse never panics; Load's errors name the
// file; a file Parse accepts validates again, renders deterministically,
// and renders to what the managed containerd accepts: host directory
// names that are one path element (runtime/containerd's writeHostsDir
// refuses others), no control characters and no IPv6 literal in the auth
// entries (its renderRegistry refuses those), and certificate paths that
// are absolute.
// Run with: go test ./internal/registries/ -run '^$' -fuzz '^FuzzParse$' -fuzztime 60s
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"mirrors:\n  docker.io:\n    endpoint: [\"https://mirror.example\", \"http://127.0.0.1:5000/v2\"]\n  \"*\":\n    endpoint: [https://all.example]\n",
		"configs:\n  reg.example:5000:\n    auth: {username: u, password: p}\n    tls: {ca_file: ca.pem, cert_file: cert.pem, key_file: key.pem}\n",
		"configs:\n  127.0.0.1:5443:\n    tls: {insecure_skip_verify: true}\n  a.io:\n    auth: {auth: dTpw}\n  b.io:\n    auth: {identitytoken: t}\n",
		"mirrors:\n  docker.io:\n    endpoint: [https://m.io]\nconfigs:\n  docker.io:\n    auth: {username: u, password: p}\n  m.io:\n    tls: {ca_file: /abs/ca.pem}\n",
		`{"mirrors":{"localhost:5000":{"endpoint":["http://localhost:5000"]}}}`,
		"mirrors:\n  a.io: {}\n  a.io: {}\n",
		"mirrors: {a: {}}\n",
		`{"configs":{"a":{"auth":{"identitytoken":"t"}}}}`,
		"configs:\n  \"[::1]:5000\":\n    auth: {username: u}\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	for _, name := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	path := filepath.Join(dir, "registries.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, dir)
		if err != nil {
			if file != nil {
				t.Fatalf("Parse returned a file and error %v", err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, lerr := Load(path); lerr == nil || !strings.Contains(lerr.Error(), path) {
				t.Fatalf("Load's error %v does not name %s", lerr, path)
			}
			return
		}
		if err := file.Validate(); err != nil {
			t.Fatalf("Parse accepted a file that does not validate again: %v", err)
		}
		r := file.Render()
		if again := file.Render(); !reflect.DeepEqual(r, again) {
			t.Fatalf("Render is not deterministic:\n%v\n%v", r, again)
		}
		for name := range r.Hosts {
			if err := checkHostsDir(name); err != nil {
				t.Fatalf("accepted file renders a hosts dir containerd refuses: %v", err)
			}
		}
		for host, a := range r.Auths {
			if strings.ContainsAny(host, "[]") {
				t.Fatalf("accepted file renders an auth for IPv6 literal %q", host)
			}
			for _, s := range []string{host, a.Username, a.Password, a.Auth, a.IdentityToken} {
				if hasControl(s) {
					t.Fatalf("accepted file renders an auth with a control character for %q: %q", host, s)
				}
			}
		}
		for host, c := range file.Configs {
			if c.TLS == nil {
				continue
			}
			for _, p := range []string{c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile} {
				if p != "" && !filepath.IsAbs(p) {
					t.Fatalf("configs[%q].tls: relative path %q after Parse", host, p)
				}
			}
		}
	})
}

// checkHostsDir is runtime/containerd's writeHostsDir check of a host
// directory name.
func checkHostsDir(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return errors.New("bad host directory name " + name)
	}
	return nil
}

// hasControl is runtime/containerd's check of a TOML string value.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// What FuzzParse's properties caught (the corpus entries under
// testdata/fuzz/FuzzParse): files that validated but that the managed
// containerd's rendering refused at start, with an error naming neither
// the file nor the field. Parse now refuses them, naming the field.
func TestParseRefusesWhatContainerdRefuses(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"mirror host ..", "mirrors:\n  ..:\n    endpoint: [\"https://m.io\"]\n", `mirrors[".."]: ".." is not a host[:port]`},
		{"mirror host .", "mirrors:\n  .: {}\n", `mirrors["."]: "." is not a host[:port]`},
		{"config host with an empty label", "configs:\n  a..io:5000:\n    auth: {identitytoken: t}\n", `configs["a..io:5000"]: "a..io:5000" is not a host[:port]`},
		{"control character in username", `{"configs":{"a.io":{"auth":{"username":"u\n","password":"p"}}}}`, `configs["a.io"].auth: username: holds a control character`},
		{"control character in password", `{"configs":{"a.io":{"auth":{"username":"u","password":"p\u007f"}}}}`, `configs["a.io"].auth: password: holds a control character`},
		{"control character in identitytoken", `{"configs":{"a.io":{"auth":{"identitytoken":"\t"}}}}`, `configs["a.io"].auth: identitytoken: holds a control character`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			}
		})
	}
}
