package containerd

import (
	"strings"
	"testing"
)

// TestConfigCgroupDriver: runc's SystemdCgroup follows skiff's
// --cgroup-driver, so both name cgroups the same way.
func TestConfigCgroupDriver(t *testing.T) {
	restrict := false
	for _, c := range []struct {
		version string
		systemd bool
	}{{"1.6.20", false}, {"1.6.20", true}, {"v2.4.2", false}, {"v2.4.2", true}} {
		systemd := c.systemd
		cfg, err := Config{RootDir: "/r", SandboxImage: "p", RestrictOOMScoreAdj: &restrict, SystemdCgroup: systemd, Version: c.version}.withDefaults()
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
			t.Errorf("containerd %s, systemd=%v: config lacks %q", c.version, systemd, want)
		}
	}
}
