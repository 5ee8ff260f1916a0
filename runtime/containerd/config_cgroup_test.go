package containerd

import (
	"strings"
	"testing"
)

// TestConfigCgroupDriver: runc's SystemdCgroup follows skiff's
// --cgroup-driver, so both name cgroups the same way.
func TestConfigCgroupDriver(t *testing.T) {
	restrict := false
	for _, systemd := range []bool{false, true} {
		cfg, err := Config{RootDir: "/r", SandboxImage: "p", RestrictOOMScoreAdj: &restrict, SystemdCgroup: systemd}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		conf, err := renderConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := "SystemdCgroup = false"
		if systemd {
			want = "SystemdCgroup = true"
		}
		if !strings.Contains(conf, want) {
			t.Errorf("systemd=%v: config lacks %q", systemd, want)
		}
	}
}
