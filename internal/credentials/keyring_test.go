package credentials

import (
	"slices"
	"strings"
	"testing"
)

// users returns the usernames of what k looks up for repo, in order.
func users(k *Keyring, repo string) []string {
	var out []string
	for _, a := range k.Lookup(repo) {
		out = append(out, a.Username)
	}
	return out
}

func keyringOf(t *testing.T, keys ...string) *Keyring {
	t.Helper()
	cfg := DockerConfig{}
	for _, key := range keys {
		cfg[key] = Entry{Username: key, Password: "p"}
	}
	k := &Keyring{}
	if errs := k.Add(cfg); len(errs) > 0 {
		t.Fatalf("Add: %v", errs)
	}
	return k
}

// TestGlobGrammar_E14 checks the grammar of checklist E.14 in host labels:
// '*', '?', classes with ranges and negation, escapes.
func TestGlobGrammar_E14(t *testing.T) {
	tests := []struct {
		key, repo string
		want      bool
	}{
		{"*my-registry.io/images", "my-registry.io/images", true},
		{"*my-registry.io/images", "my-registry.io/images/my-image", true},
		{"*my-registry.io/images", "my-registry.io/images/another-image", true},
		{"*my-registry.io/images", "your-my-registry.io/images/x", true},
		{"*my-registry.io/images", "my-registry.io/other/x", false},
		{"*.my-registry.io", "sub.my-registry.io/images/my-image", true},
		{"?y-registry.io", "my-registry.io/x", true},
		{"?y-registry.io", "mmy-registry.io/x", false},
		{"?y-registry.io", "y-registry.io/x", false},
		{"[a-m]y-registry.io", "my-registry.io/x", true},
		{"[n-z]y-registry.io", "my-registry.io/x", false},
		{"[^n-z]y-registry.io", "my-registry.io/x", true},
		{"[^a-m]y-registry.io", "my-registry.io/x", false},
		{"[xm]y-registry.io", "my-registry.io/x", true},
		{"[xz]y-registry.io", "my-registry.io/x", false},
		{`my\-registry.io`, "my-registry.io/x", true},
		{`my-registr\y.io`, "my-registry.io/x", true},
		{`\*.io`, "my.io/x", false},
		// The kubelet's own URLsMatch cases.
		{"*.kubernetes.io", "prefix.kubernetes.io", true},
		{"prefix.*.io", "prefix.kubernetes.io", true},
		{"prefix.kubernetes.*", "prefix.kubernetes.io", true},
		{"*-good.kubernetes.io", "prefix-good.kubernetes.io", true},
		{"*.kubernetes.io", "kubernetes.io", false},
		{"*.*.kubernetes.io", "a.b.kubernetes.io/x", true},
		{"kubernetes.io", "kubernetes.io/foo", true},
		{"kubernetes.io/foo", "kubernetes.io/foobar", true}, // a string prefix, as upstream
		{"kubernetes.io/foo", "kubernetes.io/bar", false},
		{"kubernetes.io/foo/bar", "kubernetes.io/foo", false},
		// Ports must be equal; schemes and /v1/, /v2/ do not count.
		{"my-registry.io:5000", "my-registry.io:5000/x", true},
		{"my-registry.io:5000", "my-registry.io/x", false},
		{"my-registry.io", "my-registry.io:5000/x", false},
		{"*.io:5000", "my.io:5000/x", true},
		{"https://my-registry.io/images", "my-registry.io/images/x", true},
		{"http://my-registry.io/v2/images", "my-registry.io/images/x", true},
		{"https://my-registry.io/v1/", "my-registry.io/x", true},
		{"[::1]:5000", "[::1]:5000/x", true},
		{"[::1]:5000", "[::1]:5001/x", false},
		{"127.0.0.1:5443", "127.0.0.1:5443/library/busybox", true},
	}
	for _, tt := range tests {
		k := keyringOf(t, tt.key)
		got := len(k.Lookup(tt.repo)) > 0
		if got != tt.want {
			t.Errorf("key %q, repo %q: match = %v, want %v", tt.key, tt.repo, got, tt.want)
		}
	}
}

// TestGlobPerLabel_E15 pins the decision on checklist E.15: globs match one
// dot-separated label, as in the kubelet (kubernetes/kubernetes#119941),
// so the seed's last two examples do not match.
func TestGlobPerLabel_E15(t *testing.T) {
	k := keyringOf(t, "*my-registry.io/images")
	for _, repo := range []string{"sub.my-registry.io/images/my-image", "a.sub.my-registry.io/images/my-image"} {
		if got := users(k, repo); len(got) != 0 {
			t.Errorf("%s matched %v; globs must not span labels", repo, got)
		}
	}
	// Nor does a key extend to longer hosts that begin with its labels.
	k = keyringOf(t, "my-registry.io")
	if got := users(k, "my-registry.io.evil.example/images/my-image"); len(got) != 0 {
		t.Errorf("my-registry.io matched my-registry.io.evil.example: %v", got)
	}
	k = keyringOf(t, "*.my-registry.io/images")
	if got := users(k, "sub.my-registry.io/images/my-image"); len(got) != 1 {
		t.Errorf("*.my-registry.io/images does not match sub.my-registry.io/images/my-image")
	}
	if got := users(k, "a.sub.my-registry.io/images/my-image"); len(got) != 0 {
		t.Errorf("*.my-registry.io/images matches a.sub.my-registry.io: %v", got)
	}
}

// TestAllMatchesMostSpecificFirst_E16: every matching credential is
// returned, the longer path first.
func TestAllMatchesMostSpecificFirst_E16(t *testing.T) {
	k := keyringOf(t, "my-registry.io/images", "my-registry.io/images/subpath", "other.io")
	if got, want := users(k, "my-registry.io/images/subpath/my-image"), []string{"my-registry.io/images/subpath", "my-registry.io/images"}; !slices.Equal(got, want) {
		t.Errorf("subpath image: %v, want %v", got, want)
	}
	if got, want := users(k, "my-registry.io/images/my-image"), []string{"my-registry.io/images"}; !slices.Equal(got, want) {
		t.Errorf("image: %v, want %v", got, want)
	}
	k = keyringOf(t, "my-registry.io", "*.io", "my-registry.io/images")
	if got, want := users(k, "my-registry.io/images/x"), []string{"my-registry.io/images", "my-registry.io", "*.io"}; !slices.Equal(got, want) {
		t.Errorf("glob and paths: %v, want %v", got, want)
	}
}

func TestSameKeyKeepsEveryCredential(t *testing.T) {
	k := &Keyring{}
	k.Add(DockerConfig{"https://my.io": {Username: "a"}, "my.io": {Username: "b"}})
	k.Add(DockerConfig{"my.io/": {Username: "c"}})
	if got, want := users(k, "my.io/x"), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestDockerHubFallback(t *testing.T) {
	k := keyringOf(t, "https://index.docker.io/v1/")
	for repo, want := range map[string]bool{
		"docker.io/library/busybox": true,
		"index.docker.io/x/y":       true,
		"busybox":                   true,
		"janedoe/app":               true,
		"quay.io/x/y":               false,
		"localhost:5000/x":          false,
	} {
		if got := len(k.Lookup(repo)) > 0; got != want {
			t.Errorf("%s: %v, want %v", repo, got, want)
		}
	}
	// A match elsewhere wins over the fallback.
	k = keyringOf(t, "https://index.docker.io/v1/", "docker.io/library")
	if got := users(k, "docker.io/library/busybox"); !slices.Equal(got, []string{"docker.io/library"}) {
		t.Errorf("got %v", got)
	}
}

func TestAddRejectsBadKeys(t *testing.T) {
	k := &Keyring{}
	errs := k.Add(DockerConfig{"[a-.io": {Username: "u"}, "https:///x": {Username: "u"}, "ok.io": {Username: "u"}, "empty.io": {}})
	if len(errs) != 2 {
		t.Fatalf("errs = %v, want 2", errs)
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), "ignored") {
			t.Errorf("err %v", err)
		}
	}
	if len(k.index) != 1 || k.index[0] != "ok.io" {
		t.Errorf("index = %v (empty entries carry no credential)", k.index)
	}
}
