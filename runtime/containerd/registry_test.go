package containerd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRenderConfigRegistry: the registry section is the CRI plugin's in
// containerd 1.x (version 2) and the images plugin's in 2.x (version 3).
func TestRenderConfigRegistry(t *testing.T) {
	for _, tt := range []struct {
		version, plugin string
		binary          func() string
	}{
		{"1.6.20~ds1", `plugins."io.containerd.grpc.v1.cri"`, func() string { p, _ := exec.LookPath("containerd"); return p }},
		{"v2.4.2", `plugins."io.containerd.cri.v1.images"`, func() string { return repoContainerd(t) }},
	} {
		t.Run(tt.version, func(t *testing.T) { testRenderConfigRegistry(t, tt.version, tt.plugin, tt.binary()) })
	}
}

func testRenderConfigRegistry(t *testing.T, version, plugin, bin string) {
	root := t.TempDir()
	no := false
	base := Config{RootDir: root, SandboxImage: "skiff.local/pause:abc", RestrictOOMScoreAdj: &no, Version: version}
	cfg, err := base.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	section := "[" + plugin + ".registry]\n  config_path = "
	conf, err := renderConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(conf, section+`"`+root+`/containerd/certs.d"`+"\n") {
		t.Errorf("config_path missing without registries:\n%s", conf)
	}
	if strings.Contains(conf, "registry.configs") {
		t.Errorf("auth entries without auths:\n%s", conf)
	}

	cfg.RegistryAuths = map[string]RegistryAuth{
		"127.0.0.1:5443": {Username: "user", Password: `p"w\d`},
		"docker.io":      {Auth: "dTpw"},
		"localhost:5000": {IdentityToken: "tok"},
	}
	conf, err = renderConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(`[P.registry.configs."127.0.0.1:5443".auth]
  username = "user"
  password = "p\"w\\d"
[P.registry.configs."docker.io".auth]
  auth = "dTpw"
[P.registry.configs."localhost:5000".auth]
  identitytoken = "tok"
`, "P", plugin)
	if !strings.Contains(conf, want) {
		t.Errorf("config:\n%s\nwant:\n%s", conf, want)
	}
	bad := cfg
	bad.RegistryAuths = map[string]RegistryAuth{"a.io": {Username: "u\n[x]"}}
	if _, err := renderConfig(bad); err == nil {
		t.Error("control character in auth accepted")
	}
	bad.RegistryAuths = map[string]RegistryAuth{"[::1]:5000": {Username: "u"}}
	if _, err := renderConfig(bad); err == nil || !strings.Contains(err.Error(), "IPv6") {
		t.Errorf("IPv6 auth host (containerd cannot read it): %v", err)
	}

	// containerd parses it, where that version is at hand (no root needed).
	if bin == "" {
		t.Skipf("no containerd %s at hand; skipping the parse check", version)
	}
	if v, err := BinaryVersion(context.Background(), bin); err != nil || v[:2] != version[:2] {
		t.Skipf("%s is containerd %s (%v), not %s; skipping the parse check", bin, v, err, version)
	}
	out := containerdConfigDump(t, bin, root, conf)
	for _, w := range []string{`config_path = "` + root + `/containerd/certs.d"`, `identitytoken = "tok"`, `username = "user"`, "[" + plugin + `.registry.configs."docker.io".auth]`} {
		if !strings.Contains(string(out), w) {
			t.Errorf("containerd's view lacks %q:\n%s", w, out)
		}
	}
}

func readHostsDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "hosts.toml"))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	return got
}

func TestWriteHostsDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "certs.d")
	// The leftover of an interrupted earlier write goes.
	if err := os.MkdirAll(filepath.Join(parent, ".certs.d-123", "x.io"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeHostsDir(dir, map[string]string{"a.io": "A", "_default": "D"}); err != nil {
		t.Fatal(err)
	}
	if got := readHostsDir(t, dir); len(got) != 2 || got["a.io"] != "A" || got["_default"] != "D" {
		t.Fatalf("first write: %v", got)
	}
	// A rewrite replaces the whole set: a.io goes.
	if err := writeHostsDir(dir, map[string]string{"_default": "D2", "127.0.0.1:5443": "L"}); err != nil {
		t.Fatal(err)
	}
	if got := readHostsDir(t, dir); len(got) != 2 || got["_default"] != "D2" || got["127.0.0.1:5443"] != "L" {
		t.Fatalf("rewrite: %v", got)
	}
	// A bad name fails and leaves the current set alone.
	if err := writeHostsDir(dir, map[string]string{"../x": "X"}); err == nil {
		t.Fatal("bad name accepted")
	}
	if got := readHostsDir(t, dir); len(got) != 2 {
		t.Fatalf("after a failed write: %v", got)
	}
	if err := writeHostsDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	if got := readHostsDir(t, dir); len(got) != 0 {
		t.Fatalf("empty set: %v", got)
	}
	entries, _ := os.ReadDir(parent)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"certs.d"}) {
		t.Errorf("parent holds %v; temporary directories left behind", names)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("certs.d mode: %v %v", fi.Mode(), err)
	}
}

// TestWriteConfigFiles: what Start writes before it launches containerd.
func TestWriteConfigFiles(t *testing.T) {
	root := t.TempDir()
	no := false
	cfg, err := Config{
		RootDir: root, SandboxImage: "p:1", RestrictOOMScoreAdj: &no, Version: "v2.4.2",
		RegistryHosts: map[string]string{"docker.io": "H"},
		RegistryAuths: map[string]RegistryAuth{"docker.io": {Username: "u", Password: "p"}},
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p := pathsFor(root)
	if err := os.MkdirAll(p.dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := writeConfigFiles(cfg, p); err != nil {
		t.Fatal(err)
	}
	if got := readHostsDir(t, p.certsD); len(got) != 1 || got["docker.io"] != "H" {
		t.Errorf("hosts dir: %v", got)
	}
	conf, err := os.ReadFile(p.config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`config_path = "` + p.certsD + `"`, `registry.configs."docker.io".auth]`} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config.toml lacks %q", want)
		}
	}
	if fi, err := os.Stat(p.config); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.toml (holds credentials) mode: %v %v", fi.Mode(), err)
	}
}
