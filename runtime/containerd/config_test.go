package containerd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestHasCapSysResource(t *testing.T) {
	tests := []struct {
		name, status string
		want         bool
		wantErr      bool
	}{
		{name: "all caps", status: "Name:\tx\nCapEff:\t000001ffffffffff\n", want: true},
		{name: "this machine: no CAP_SYS_RESOURCE", status: "CapEff:\t000001fffeffffff\n", want: false},
		{name: "only bit 24", status: "CapEff:\t0000000001000000\n", want: true},
		{name: "none", status: "CapEff:\t0000000000000000\n", want: false},
		{name: "missing line", status: "Name:\tx\n", wantErr: true},
		{name: "garbage", status: "CapEff:\tzz\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "status")
			if err := os.WriteFile(path, []byte(tt.status), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := hasCapSysResource(path)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("hasCapSysResource = %v, %v; want %v, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := hasCapSysResource("/proc/self/status"); err != nil {
		t.Fatalf("own status: %v", err)
	}
}

func TestWithDefaults(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "no root", cfg: Config{SandboxImage: "p:1"}, wantErr: "RootDir"},
		{name: "no sandbox image", cfg: Config{RootDir: "/r"}, wantErr: "SandboxImage"},
		{name: "socket path too long", cfg: Config{RootDir: "/" + strings.Repeat("d", 80), SandboxImage: "p:1"}, wantErr: "longer than"},
		{
			name: "defaults", cfg: Config{RootDir: "/r", SandboxImage: "p:1"},
			check: func(t *testing.T, c Config) {
				if c.Binary != "containerd" || c.CNIBinDir != "/usr/lib/cni" || c.CNIConfDir != "/r/cni/net.d" ||
					c.LogFile != "/r/containerd/containerd.log" || c.Logger == nil || c.RestrictOOMScoreAdj == nil {
					t.Errorf("defaults = %+v", c)
				}
			},
		},
		{
			name: "explicit values kept", cfg: Config{RootDir: "/r", SandboxImage: "p:1", Binary: "/b", CNIBinDir: "/cb", CNIConfDir: "/cc", LogFile: "/l", RestrictOOMScoreAdj: &yes},
			check: func(t *testing.T, c Config) {
				if c.Binary != "/b" || c.CNIBinDir != "/cb" || c.CNIConfDir != "/cc" || c.LogFile != "/l" || !*c.RestrictOOMScoreAdj {
					t.Errorf("config = %+v", c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestRenderConfig(t *testing.T) {
	root := t.TempDir()
	no := false
	cfg, err := Config{RootDir: root, SandboxImage: "skiff.local/pause:abc", RestrictOOMScoreAdj: &no}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	conf, err := renderConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version = 2\n",
		`root = "` + root + `/containerd/root"`,
		`state = "` + root + `/containerd/state"`,
		`address = "` + root + `/containerd/containerd.sock"`,
		"oom_score = 0\n",
		`sandbox_image = "skiff.local/pause:abc"`,
		"restrict_oom_score_adj = false",
		`snapshotter = "overlayfs"`,
		`runtime_type = "io.containerd.runc.v2"`,
		"SystemdCgroup = false",
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "` + root + `/cni/net.d"`,
		`"io.containerd.snapshotter.v1.btrfs"`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if _, err := renderConfig(Config{RootDir: "/r\n", SandboxImage: "x", RestrictOOMScoreAdj: &no}); err == nil {
		t.Error("control character accepted")
	}

	// containerd itself parses the file, where installed (no root needed).
	out := containerdConfigDump(t, root, conf)
	for _, want := range []string{`sandbox_image = "skiff.local/pause:abc"`, "SystemdCgroup = false", `path = "` + root + `/containerd/opt"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("containerd's view lacks %q", want)
		}
	}
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{`a`: `"a"`, `a"b`: `"a\"b"`, `a\b`: `"a\\b"`} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// containerdConfigDump writes conf under root and returns what
// `containerd config dump` makes of it; it skips t where containerd is not
// installed (no root needed).
func containerdConfigDump(t *testing.T, root, conf string) []byte {
	t.Helper()
	bin, err := exec.LookPath("containerd")
	if err != nil {
		t.Skip("containerd not installed; skipping parse check")
	}
	path := filepath.Join(root, "config.toml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", path, "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, out)
	}
	return out
}
