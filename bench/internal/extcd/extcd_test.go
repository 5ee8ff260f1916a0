package extcd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func testConfig() Config {
	return Config{Dir: "/tmp/sb-1/external", SandboxImage: "bench.local/pause-go:0123456789ab"}.WithDefaults()
}

func TestRenderConfig(t *testing.T) {
	got := RenderConfig(testConfig())
	for _, want := range []string{
		"version = 2\n",
		`root = "/tmp/sb-1/external/root"`,
		`state = "/tmp/sb-1/external/state"`,
		"[grpc]\n  address = \"/tmp/sb-1/external/containerd.sock\"",
		`sandbox_image = "bench.local/pause-go:0123456789ab"`,
		"restrict_oom_score_adj = true",
		`runtime_type = "io.containerd.runc.v2"`,
		"SystemdCgroup = false",
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "/tmp/sb-1/external/net.d"`,
		`path = "/tmp/sb-1/external/opt"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}

// TestRenderConfigShimGroups: the group annotation is passed through in the
// runc runtime's table only when asked for.
func TestRenderConfigShimGroups(t *testing.T) {
	const line = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n  pod_annotations = [\"io.containerd.runc.v2.group\"]\n"
	c := testConfig()
	if got := RenderConfig(c); strings.Contains(got, "pod_annotations") {
		t.Errorf("plain config has pod_annotations:\n%s", got)
	}
	c.ShimGroups = true
	if got := RenderConfig(c); !strings.Contains(got, line) {
		t.Errorf("config lacks %q:\n%s", line, got)
	}
	if got := Summary(c); !strings.Contains(got, "pod_annotations") {
		t.Errorf("summary does not say so: %s", got)
	}
}

func TestConflist(t *testing.T) {
	data, err := Conflist(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type      string `json:"type"`
			Bridge    string `json:"bridge"`
			IsGateway *bool  `json:"isGateway"`
			IPMasq    *bool  `json:"ipMasq"`
			IPAM      struct {
				Type    string                `json:"type"`
				Ranges  [][]map[string]string `json:"ranges"`
				DataDir string                `json:"dataDir"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("conflist is not JSON: %v\n%s", err, data)
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Type)
	}
	if strings.Join(types, ",") != "bridge,portmap,loopback" {
		t.Fatalf("plugins %v, want bridge, portmap, loopback", types)
	}
	br := list.Plugins[0]
	if br.Bridge != "cni-ext0" || br.IsGateway == nil || !*br.IsGateway || br.IPMasq == nil || *br.IPMasq {
		t.Errorf("bridge plugin %+v: want cni-ext0, isGateway true, ipMasq false (set explicitly)", br)
	}
	if br.IPAM.Type != "host-local" || br.IPAM.Ranges[0][0]["subnet"] != "10.89.0.0/16" || br.IPAM.DataDir != "/tmp/sb-1/external/ipam" {
		t.Errorf("IPAM %+v: want host-local 10.89.0.0/16 with its data under the directory", br.IPAM)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"ok", func(*Config) {}, ""},
		{"relative", func(c *Config) { c.Dir = "external" }, "not absolute"},
		{"long socket", func(c *Config) { c.Dir = "/tmp/" + strings.Repeat("x", 90) }, "longer than"},
		{"no pause", func(c *Config) { c.SandboxImage = "" }, "no sandbox image"},
		{"long bridge", func(c *Config) { c.Bridge = "a-very-long-bridge" }, "longer than 15"},
		{"quote", func(c *Config) { c.Dir = `/tmp/a"b` }, "TOML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.mutate(&c)
			err := c.Validate()
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

// The test binary itself is a static executable when built with
// CGO_ENABLED=0 (else the test skips); a tar file is refused.
func TestWritePauseArchive(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "pause.tar")
	ref, err := WritePauseArchive(exe, archive)
	if err != nil {
		if strings.Contains(err.Error(), "dynamically linked") {
			t.Skip("test binary is dynamically linked (cgo)")
		}
		t.Fatal(err)
	}
	data, _ := os.ReadFile(exe)
	if ref != PauseRef(data) || !strings.HasPrefix(ref, "bench.local/pause-go:") {
		t.Errorf("ref %q, want %q", ref, PauseRef(data))
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/pause" || cf.OS != "linux" {
		t.Errorf("config %+v: want entrypoint /pause on linux", cf.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d (%v), want 1", len(layers), err)
	}
	if _, err := WritePauseArchive(filepath.Join(dir, "pause.tar"), filepath.Join(dir, "x.tar")); err == nil {
		t.Error("a tar file as the pause executable: want an error")
	}
}
