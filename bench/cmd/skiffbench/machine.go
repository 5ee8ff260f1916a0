package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/bench/internal/report"
)

// machine describes the host from /proc and uname.
func machine() report.Machine {
	m := report.Machine{Cores: runtime.NumCPU(), CPUModel: "unknown", CgroupMode: cgroupMode()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.MemoryGB = float64(si.Totalram) * float64(si.Unit) / 1e9
	}
	return m
}

// cgroupMode tells v2 (unified), v1 with a v2 hierarchy (hybrid) and v1.
func cgroupMode() string {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil {
		return "unknown"
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "v2 (unified)"
	}
	if unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "v1 (hybrid)"
	}
	return "v1 (legacy)"
}

// versions of the binaries; each run's CRI version is in report.Run.
func versions(f flags) report.Versions {
	v := report.Versions{Skiff: f.skiffVersion, Runc: version("runc", "--version"), Containerd: version("containerd", "--version")}
	if v.Skiff == "" {
		v.Skiff = gitDescribe()
	}
	// skiff's managed mode takes the runtime beside its executable first.
	dir := filepath.Dir(f.skiffBin)
	if _, err := os.Stat(filepath.Join(dir, "containerd")); err == nil {
		v.ManagedContainerd = version(filepath.Join(dir, "containerd"), "--version")
		v.ManagedRunc = version(filepath.Join(dir, "runc"), "--version")
	}
	if f.kubeletBin != "" {
		v.Kubelet = version(f.kubeletBin, "--version")
	}
	return v
}

func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--tags").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
