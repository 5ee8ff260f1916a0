package main

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

func TestSecurityFlags_G15(t *testing.T) {
	cmd := newAgentCmd()
	if err := cmd.Flags().Parse([]string{"--seccomp-default", "--allowed-unsafe-sysctls=kernel.msg*,net.core.somaxconn"}); err != nil {
		t.Fatal(err)
	}
	v, _ := cmd.Flags().GetStringSlice("allowed-unsafe-sysctls")
	d, _ := cmd.Flags().GetBool("seccomp-default")
	if len(v) != 2 || v[0] != "kernel.msg*" || v[1] != "net.core.somaxconn" || !d {
		t.Errorf("flags: allowed-unsafe-sysctls %v, seccomp-default %v", v, d)
	}
	o := securityOptions{seccompDefault: true, allowedUnsafeSysctls: v}
	cfg := o.config("/var/lib/skiff")
	if cfg.SeccompProfileRoot != "/var/lib/skiff/seccomp" || !cfg.SeccompDefault || len(cfg.AllowedUnsafeSysctls) != 2 || cfg.KernelVersion == "" {
		t.Errorf("config = %+v", cfg)
	}
}
