package main

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/agent"
)

// securityOptions are the kubelet's security flags skiff has.
type securityOptions struct {
	seccompDefault       bool
	allowedUnsafeSysctls []string
}

func addSecurityFlags(f *pflag.FlagSet, o *securityOptions) {
	f.BoolVar(&o.seccompDefault, "seccomp-default", false, "run containers that name no seccomp profile with the runtime's default profile instead of unconfined")
	f.StringSliceVar(&o.allowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, "comma-separated unsafe sysctls or prefixes ending in * (e.g. 'kernel.msg*,net.core.somaxconn') that pods may set beyond the safe set")
}

// config is the agent's SecurityConfig: Localhost seccomp profiles under
// <root-dir>/seccomp, as the kubelet's, and what the host supports.
func (o *securityOptions) config(rootDir string) agent.SecurityConfig {
	return agent.SecurityConfig{
		SeccompProfileRoot:   filepath.Join(rootDir, "seccomp"),
		SeccompDefault:       o.seccompDefault,
		AllowedUnsafeSysctls: o.allowedUnsafeSysctls,
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
