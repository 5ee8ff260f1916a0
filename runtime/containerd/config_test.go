package containerd

import (
	"bytes"
	"context"
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

// TestRenderConfig: the config's schema follows containerd's major
// version, and containerd itself reads the file where that version is at
// hand (Debian's 1.6 on PATH, skiff's own 2.x in the repository's bin/).
func TestRenderConfig(t *testing.T) {
	tests := []struct {
		version string
		want    []string
		// dumpWant is what `containerd config dump` of that version shows.
		binary   func() string
		dumpWant []string
	}{
		{
			version: "1.6.20~ds1",
			want: []string{
				"version = 2\n",
				`sandbox_image = "skiff.local/pause:abc"`,
				`[plugins."io.containerd.grpc.v1.cri".containerd]` + "\n  snapshotter = \"overlayfs\"",
				`bin_dir = "/usr/lib/cni"`,
				`[plugins."io.containerd.grpc.v1.cri".registry]`,
			},
			binary:   func() string { p, _ := exec.LookPath("containerd"); return p },
			dumpWant: []string{`sandbox_image = "skiff.local/pause:abc"`, "SystemdCgroup = false"},
		},
		{
			version: "v2.4.2",
			want: []string{
				"version = 4\n",
				`[plugins."io.containerd.server.v1.grpc"]` + "\n  address = ",
				`[plugins."io.containerd.server.v1.ttrpc"]` + "\n  address = ",
				`containerd.sock.ttrpc"`,
				`[plugins."io.containerd.cri.v1.images".pinned_images]` + "\n  sandbox = \"skiff.local/pause:abc\"",
				`[plugins."io.containerd.cri.v1.images"]` + "\n  snapshotter = \"overlayfs\"",
				`[plugins."io.containerd.cri.v1.images".registry]`,
				`[plugins."io.containerd.cri.v1.runtime"]` + "\n  restrict_oom_score_adj = false",
				`bin_dirs = ["/usr/lib/cni"]`,
				`BinaryName = "/rt/runc"`,
				`"io.containerd.nri.v1.nri"`,
			},
			binary:   func() string { return repoContainerd(t) },
			dumpWant: []string{`sandbox = "skiff.local/pause:abc"`, "SystemdCgroup = false", `BinaryName = "/rt/runc"`},
		},
	}
	tests = append(tests, struct {
		version  string
		want     []string
		binary   func() string
		dumpWant []string
	}{
		version: "v2.2.1",
		want:    []string{"version = 3\n", "[grpc]\n  address = ", `sandbox = "skiff.local/pause:abc"`},
		binary:  func() string { return "" },
	})
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			root := t.TempDir()
			no := false
			cfg, err := Config{RootDir: root, SandboxImage: "skiff.local/pause:abc", RestrictOOMScoreAdj: &no, Version: tt.version, BinDir: "/rt", ShimGroups: true}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			conf, err := renderConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range append(tt.want,
				`root = "`+root+`/containerd/root"`,
				`state = "`+root+`/containerd/state"`,
				`address = "`+root+`/containerd/containerd.sock"`,
				"oom_score = 0\n",
				"restrict_oom_score_adj = false",
				`runtime_type = "io.containerd.runc.v2"`,
				"SystemdCgroup = false",
				`conf_dir = "`+root+`/cni/net.d"`,
				`"io.containerd.snapshotter.v1.btrfs"`,
				`pod_annotations = ["io.containerd.runc.v2.group"]`,
			) {
				if !strings.Contains(conf, want) {
					t.Errorf("config lacks %q:\n%s", want, conf)
				}
			}
			bin := tt.binary()
			if bin == "" {
				t.Skipf("no containerd %s at hand; skipping the parse check", tt.version)
			}
			if v, err := BinaryVersion(context.Background(), bin); err != nil || v[:2] != tt.version[:2] {
				t.Skipf("%s is containerd %s (%v), not %s; skipping the parse check", bin, v, err, tt.version)
			}
			out := containerdConfigDump(t, bin, root, conf)
			for _, want := range append(tt.dumpWant, `path = "`+root+`/containerd/opt"`, "io.containerd.runc.v2.group") {
				if !strings.Contains(string(out), want) {
					t.Errorf("containerd's view lacks %q:\n%s", want, out)
				}
			}
		})
	}
	no := false
	for _, v := range []string{"1.6.20", "v2.4.2"} {
		conf, err := renderConfig(Config{RootDir: "/r", SandboxImage: "x", RestrictOOMScoreAdj: &no, Version: v})
		if err != nil || strings.Contains(conf, "pod_annotations") {
			t.Errorf("containerd %s without shim groups: pod_annotations passed (%v):\n%s", v, err, conf)
		}
	}
	if _, err := renderConfig(Config{RootDir: "/r\n", SandboxImage: "x", RestrictOOMScoreAdj: &no, Version: "v2.4.2"}); err == nil {
		t.Error("control character accepted")
	}
	if _, err := renderConfig(Config{RootDir: "/r", SandboxImage: "x", RestrictOOMScoreAdj: &no}); err == nil {
		t.Error("no version accepted")
	}
}

// repoContainerd is the repository's bin/containerd (make runtime), or ""
// when it is not built.
func repoContainerd(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../bin/containerd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{`a`: `"a"`, `a"b`: `"a\"b"`, `a\b`: `"a\\b"`} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// containerdConfigDump writes conf under root and returns what
// `bin config dump` makes of it (no root needed), single quotes made double.
func containerdConfigDump(t *testing.T, bin, root, conf string) []byte {
	t.Helper()
	path := filepath.Join(root, "config.toml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", path, "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, out)
	}
	// containerd 2 writes TOML literal strings; none here holds a quote.
	return bytes.ReplaceAll(out, []byte("'"), []byte(`"`))
}
