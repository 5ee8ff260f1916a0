package node

import (
	"bytes"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/agent"
)

// securityOptions are the kubelet's security flags skiff has.
type SecurityConfig struct {
	SeccompDefault       bool
	AllowedUnsafeSysctls []string
}

// config is the agent's SecurityConfig: Localhost seccomp profiles under
// <root-dir>/seccomp, as the kubelet's, and what the host supports.
func (o *SecurityConfig) config(rootDir string) agent.SecurityConfig {
	return agent.SecurityConfig{
		SeccompProfileRoot:   filepath.Join(rootDir, "seccomp"),
		SeccompDefault:       o.SeccompDefault,
		AllowedUnsafeSysctls: o.AllowedUnsafeSysctls,
		KernelVersion:        kernelRelease(),
		AppArmorEnabled:      appArmorEnabled("/sys"),
	}
}

// kernelRelease is uname -r ("" if unknown).
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// appArmorEnabled reports whether the host enforces AppArmor, as runc
// decides it: securityfs has apparmor and the module is enabled.
func appArmorEnabled(sys string) bool {
	if _, err := os.Stat(filepath.Join(sys, "kernel", "security", "apparmor")); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(sys, "module", "apparmor", "parameters", "enabled"))
	return err == nil && bytes.HasPrefix(b, []byte("Y"))
}
