package credentials

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/runtime"
)

// FuzzParseDockerConfig: docker config files (--image-credential-file,
// the kubelet's search paths) and image pull secrets are outside input.
// ParseConfigJSON, ParseDockercfg and ParseAny never panic and their
// errors name the source; ParseAny agrees with the parser its content
// selects; a parsed config has no undecoded auth field; the keyring
// built from it never panics and Lookup is deterministic and returns
// only credentials of the config.
// Run with: go test ./internal/credentials/ -run '^$' -fuzz '^FuzzParseDockerConfig$' -fuzztime 60s
func FuzzParseDockerConfig(f *testing.F) {
	for _, seed := range []struct{ data, repo string }{
		{`{"auths":{"a.io":{"auth":"` + b64("u:p") + `"},"b.io":{"username":"u","password":"p"}}}`, "a.io/x/y"},
		{`{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"}},"credsStore":"desktop"}`, "docker.io/library/nginx"},
		{`{"*.example.com":{"identitytoken":"t"},"[::1]:5000/p":{"registrytoken":"r"}}`, "reg.example.com/app"},
		{`{"quay.io/coreos":{"auth":"YTpi"},"quay.io":{"auth":"YzpkCg=="}}`, "quay.io/coreos/etcd"},
		{`{"auths":{"h[^a-c]?.io:5000/v2/":{"username":"x"}}}`, "hb1.io:5000/p"},
		{`{"auths":{"a.io":{"auth":"!!"}}}`, "a.io"},
		{`{"a.io":{"auth":"bm9jb2xvbg"}}`, "ubuntu"},
		{`{"auths":null}`, ""},
		{`[]`, "a"},
		{`{"auths":{"[":{"username":"u"}}}`, "[/a"},
	} {
		f.Add([]byte(seed.data), seed.repo)
	}
	const source = "/root/.docker/config.json"
	f.Fuzz(func(t *testing.T, data []byte, repo string) {
		for _, parse := range []func([]byte, string) (DockerConfig, error){ParseConfigJSON, ParseDockercfg} {
			if _, err := parse(data, source); err != nil && !strings.HasPrefix(err.Error(), source+": ") {
				t.Fatalf("error %q does not name the source", err)
			}
		}
		cfg, err := ParseAny(data, source)
		if err != nil {
			if cfg != nil {
				t.Fatalf("ParseAny returned a config and error %v", err)
			}
			if !strings.HasPrefix(err.Error(), source+": ") {
				t.Fatalf("error %q does not name the source", err)
			}
			return
		}
		want, werr := ParseDockercfg(data, source)
		if hasAuthsKey(data) {
			want, werr = ParseConfigJSON(data, source)
		}
		if werr != nil || !reflect.DeepEqual(cfg, want) {
			t.Fatalf("ParseAny = %v, the parser its content selects = %v, %v", cfg, want, werr)
		}
		for key, e := range cfg {
			if e.Auth != "" {
				t.Fatalf("key %q: auth field left undecoded", key)
			}
		}
		var kr Keyring
		for _, err := range kr.Add(cfg) {
			if !strings.HasPrefix(err.Error(), "entry ") {
				t.Fatalf("Add error %q does not name the entry", err)
			}
		}
		got := kr.Lookup(repo)
		if again := kr.Lookup(repo); !reflect.DeepEqual(got, again) {
			t.Fatalf("Lookup(%q) is not deterministic: %v, %v", repo, got, again)
		}
		var all []runtime.AuthConfig
		for _, e := range cfg {
			all = append(all, e.authConfig())
		}
		for _, a := range got {
			if !slices.Contains(all, a) {
				t.Fatalf("Lookup(%q) returned %+v, not in the config", repo, a)
			}
		}
	})
}

// hasAuthsKey reports whether data is a JSON object with an "auths" key.
func hasAuthsKey(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top["auths"]
	return ok
}
