package node

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAppArmorEnabled_G15(t *testing.T) {
	for _, tt := range []struct {
		name       string
		securityfs bool
		param      string // "" : no module parameter file
		want       bool
	}{
		{"no AppArmor", false, "", false},
		{"module enabled", true, "Y\n", true},
		{"module disabled", true, "N\n", false},
		{"securityfs without the module parameter", true, "", false},
		{"parameter without securityfs", false, "Y\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sys := t.TempDir()
			if tt.securityfs {
				if err := os.MkdirAll(filepath.Join(sys, "kernel", "security", "apparmor"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.param != "" {
				dir := filepath.Join(sys, "module", "apparmor", "parameters")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "enabled"), []byte(tt.param), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := appArmorEnabled(sys); got != tt.want {
				t.Errorf("appArmorEnabled = %v, want %v", got, tt.want)
			}
		})
	}
}

// The security flags become the agent's security config, with the seccomp
// profiles under <root-dir>/seccomp (G.15).
func TestSecurityConfig_G15(t *testing.T) {
	o := SecurityConfig{SeccompDefault: true, AllowedUnsafeSysctls: []string{"kernel.msg*", "net.core.somaxconn"}}
	cfg := o.config("/var/lib/skiff")
	if cfg.SeccompProfileRoot != "/var/lib/skiff/seccomp" || !cfg.SeccompDefault || len(cfg.AllowedUnsafeSysctls) != 2 || cfg.KernelVersion == "" {
		t.Errorf("config = %+v", cfg)
	}
}
