package credentials

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/runtime"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func names(auths []runtime.AuthConfig) []string {
	var out []string
	for _, a := range auths {
		out = append(out, a.Username)
	}
	return out
}

func TestSearchPaths(t *testing.T) {
	got := SearchPaths("/var/lib/skiff", "/wd", "/home/u")
	want := []string{
		"/var/lib/skiff/config.json", "/wd/config.json", "/home/u/.docker/config.json", "/.docker/config.json",
		"/var/lib/skiff/.dockercfg", "/wd/.dockercfg", "/home/u/.dockercfg", "/.dockercfg",
	}
	if !slices.Equal(got, want) {
		t.Errorf("SearchPaths = %v\nwant %v", got, want)
	}
	if got := SearchPaths("/r", "/wd", ""); slices.Contains(got, ".docker/config.json") || len(got) != 6 {
		t.Errorf("no home: %v", got)
	}
}

type dirs struct{ root, work, home string }

func newDirs(t *testing.T) dirs {
	base := t.TempDir()
	d := dirs{filepath.Join(base, "root"), filepath.Join(base, "work"), filepath.Join(base, "home")}
	for _, p := range []string{d.root, d.work, d.home} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d dirs) provider(t *testing.T, secrets objects.Getter) *Provider {
	t.Helper()
	p, err := New(Config{RootDir: d.root, WorkDir: d.work, HomeDir: d.home, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pod(pullSecrets ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for _, s := range pullSecrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

// TestNodeSearchOrder: a valid config.json anywhere in the search path
// beats a .dockercfg; invalid files are skipped, as in the kubelet.
func TestNodeSearchOrder(t *testing.T) {
	d := newDirs(t)
	write(t, filepath.Join(d.root, ".dockercfg"), `{"my.io": {"username": "root-legacy"}}`)
	write(t, filepath.Join(d.home, ".docker", "config.json"), `{"auths": {"my.io": {"username": "home-json"}}}`)
	write(t, filepath.Join(d.work, "config.json"), `{"auths": {"my.io": {"auth": "!!"}}}`) // invalid: skipped
	p := d.provider(t, nil)
	if got := names(must(p.ForPod(pod(), "my.io/app:1"))); !slices.Equal(got, []string{"home-json"}) {
		t.Errorf("got %v, want the home config.json", got)
	}
	write(t, filepath.Join(d.root, "config.json"), `{"auths": {"my.io": {"username": "root-json"}}}`)
	if got := names(must(p.ForPod(pod(), "my.io/app:1"))); !slices.Equal(got, []string{"root-json"}) {
		t.Errorf("after adding root config.json: %v", got)
	}
	for _, f := range []string{filepath.Join(d.root, "config.json"), filepath.Join(d.home, ".docker", "config.json"), filepath.Join(d.work, "config.json")} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := names(must(p.ForPod(pod(), "my.io/app:1"))); !slices.Equal(got, []string{"root-legacy"}) {
		t.Errorf("legacy fallback: %v", got)
	}
}

func must(a []runtime.AuthConfig, missing, w []string) []runtime.AuthConfig {
	if len(missing)+len(w) > 0 {
		panic(strings.Join(append(missing, w...), "; "))
	}
	return a
}

// TestExplicitFileReload: --image-credential-file is re-read when it
// changes; an invalid rewrite keeps the last good credentials.
func TestExplicitFileReload(t *testing.T) {
	f := filepath.Join(t.TempDir(), "creds.json")
	write(t, f, `{"auths": {"my.io": {"username": "one"}}}`)
	p, err := New(Config{File: f})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(must(p.ForPod(pod(), "my.io/a"))); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("got %v", got)
	}
	write(t, f, `{"my.io": {"username": "two"}}`) // legacy format, chosen by content
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	if got := names(must(p.ForPod(pod(), "my.io/a"))); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("after rewrite: %v", got)
	}
	write(t, f, `{"auths": `)
	if got := names(must(p.ForPod(pod(), "my.io/a"))); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("after a broken rewrite: %v, want the previous credentials", got)
	}
}

func TestExplicitFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(Config{File: filepath.Join(dir, "missing.json")}); err == nil || !strings.Contains(err.Error(), "--image-credential-file") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	write(t, bad, `{"auths": {"my.io": {"auth": "bm9jb2xvbg=="}}}`)
	if _, err := New(Config{File: bad}); err == nil || !strings.Contains(err.Error(), `key "my.io": auth`) {
		t.Errorf("bad file: %v", err)
	}
}

func secret(name, ns string, typ v1.SecretType, key, content string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Type:       typ, Data: map[string][]byte{key: []byte(content)},
	}
}

// TestForPod_E12_E13: the pod's secrets of the two docker types (in the
// pod's namespace) come first, most specific key first across secrets,
// then the node's; other secrets are warnings.
func TestForPod_E12_E13(t *testing.T) {
	d := newDirs(t)
	write(t, filepath.Join(d.root, "config.json"), `{"auths": {"my.io": {"username": "node"}, "other.io": {"username": "node-other"}}}`)
	store := objects.NewStore()
	store.Replace(nil, []*v1.Secret{
		secret("json", "ns", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths": {"my.io": {"username": "pod-json"}}}`),
		secret("cfg", "ns", v1.SecretTypeDockercfg, v1.DockerConfigKey, `{"my.io/images": {"username": "pod-cfg"}}`),
		secret("opaque", "ns", v1.SecretTypeOpaque, v1.DockerConfigJsonKey, `{"auths": {"my.io": {"username": "opaque"}}}`),
		secret("elsewhere", "other-ns", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths": {"my.io": {"username": "elsewhere"}}}`),
		secret("broken", "ns", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths": {"my.io": {"auth": "!!"}}}`),
		secret("nokey", "ns", v1.SecretTypeDockercfg, "wrong", `{}`),
	})
	p := d.provider(t, store)
	auths, missing, warnings := p.ForPod(pod("json", "", "missing", "cfg", "opaque", "elsewhere", "broken", "nokey"), "my.io/images/app:1")
	if got, want := names(auths), []string{"pod-cfg", "pod-json", "node"}; !slices.Equal(got, want) {
		t.Errorf("auths = %v, want %v", got, want)
	}
	if want := []string{"missing", "elsewhere"}; !slices.Equal(missing, want) {
		t.Errorf("missing = %q, want %q (the secrets of the kubelet's FailedToRetrieveImagePullSecret)", missing, want)
	}
	wantWarnings := []string{
		`image pull secret "opaque" is of type Opaque, not kubernetes.io/dockercfg or kubernetes.io/dockerconfigjson; ignoring it`,
		`image pull secret "broken" key .dockerconfigjson: key "my.io": auth: not base64`,
		`image pull secret "nokey" of type kubernetes.io/dockercfg has no .dockercfg key; ignoring it`,
	}
	if len(warnings) != len(wantWarnings) {
		t.Fatalf("warnings = %q", warnings)
	}
	for i, w := range wantWarnings {
		if !strings.HasPrefix(warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, warnings[i], w)
		}
	}

	// Without pull secrets: the node's credentials only; Docker Hub names
	// are normalized before matching.
	if got := names(must(p.ForPod(pod(), "other.io/x"))); !slices.Equal(got, []string{"node-other"}) {
		t.Errorf("node only: %v", got)
	}
	if got := names(must(p.ForPod(pod(), "busybox"))); len(got) != 0 {
		t.Errorf("busybox: %v", got)
	}
	if auths, m, w := p.ForPod(pod(), "UPPER/Case::bad"); auths != nil || m != nil || w != nil {
		t.Errorf("invalid name: %v %v %v", auths, m, w)
	}
}

func TestForPodNormalizesDockerHubNames(t *testing.T) {
	d := newDirs(t)
	write(t, filepath.Join(d.root, "config.json"), `{"auths": {"docker.io/library": {"username": "lib"}, "https://index.docker.io/v1/": {"username": "hub"}}}`)
	p := d.provider(t, nil)
	for image, want := range map[string]string{"busybox:1.36": "lib", "docker.io/library/nginx": "lib", "janedoe/awesomeapp:v1": "hub"} {
		if got := names(must(p.ForPod(pod(), image))); !slices.Equal(got, []string{want}) {
			t.Errorf("%s: %v, want %s", image, got, want)
		}
	}
}
