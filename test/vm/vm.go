// Package vm runs a command inside a throwaway QEMU virtual machine with a
// cgroup v2-only kernel, so that skiff's cgroup v2 support can be tested on
// hosts (and CI machines) that run cgroup v1 and have no KVM.
//
// The guest is Debian's cloud kernel booted with qemu -accel tcg and an
// initramfs assembled from the host: a static busybox, the kernel modules
// containers need, containerd, containerd-shim-runc-v2, runc, the CNI
// plugins and iptables (with their shared libraries), plus the files the
// caller adds (the skiff binary, image archives, a test binary). Its /init
// copies the tree into a tmpfs and switch_roots into it (runc cannot
// pivot_root away from an initramfs), mounts cgroup2 on /sys/fs/cgroup with
// every controller enabled, loads the modules, brings up loopback and a
// dummy eth0 with 10.0.2.15/24, runs the command with a timeout and prints
//
//	SKIFF-VM-BOOTED <nonce> uptime=... cgroupfs=cgroup2fs controllers="..."
//	SKIFF-VM-RESULT <nonce> rc=<status>[ reason=timeout|setup]
//
// on the serial console (qemu's stdout), then powers off. The host streams
// the console to a log, enforces an overall timeout and returns the
// command's status. The command's own output goes to the console too.
//
// RunSystemd (systemd.go) boots the same kernel differently: the root is a
// debootstrap'ed Debian 12 disk with systemd as PID 1, built once per
// machine and cached (sysroot.go), for the tests that need a real init
// system (skiff.service, sd_notify, logind).
//
// cmd/vmrun is the command-line front end (`make test-v2` runs the e2e
// suite through it); smoke_test.go (SKIFF_VM=1) boots the VM to check the
// status round trip, cgroup v2, the runtime programs and the watchdog.
package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Options configure Run.
type Options struct {
	// Image describes the guest; Image.Kernel is found by Run when its
	// Image field is empty, Image.Nonce is generated when empty, and
	// Image.Timeout defaults to Timeout less BootAllowance.
	Image Image
	// KernelImage selects a vmlinuz (default: the newest cloud kernel
	// below KernelRoots).
	KernelImage string
	// KernelRoots are searched for the kernel (default DefaultKernelRoots).
	KernelRoots []string
	// Machine configures qemu; its Kernel, Initrd, Nonce and Timeout are
	// filled in by Run.
	Machine Machine
	// Timeout bounds the whole run (default 15m).
	Timeout time.Duration
	// Gzip compresses the initramfs (smaller file, slower start).
	Gzip bool
	// WorkDir holds the initramfs; empty: a temporary directory, removed
	// afterwards unless KeepWorkDir.
	WorkDir     string
	KeepWorkDir bool
}

// BootAllowance is the part of Options.Timeout kept for booting and
// powering off when the command's own timeout is derived from it.
const BootAllowance = 2 * time.Minute

// Timings report where a run spent its time.
type Timings struct {
	// Build is the time to assemble and write the initramfs.
	Build time.Duration
	// Boot is the time from starting qemu to the guest's boot marker.
	Boot time.Duration
	// Command is the rest of the qemu run: the command and power-off.
	Command time.Duration
	// Total is Build plus the qemu run.
	Total time.Duration
	// InitramfsBytes is the size of the initramfs file.
	InitramfsBytes int64
	// Root is the time RunSystemd spent building its cached root disk
	// (zero when it was cached); it is part of Build.
	Root time.Duration
}

// Run builds the initramfs, boots the VM and returns the guest's result.
// The error wraps ErrNoResult when the guest reported no result.
func Run(ctx context.Context, opts Options) (*Result, Timings, error) {
	var tm Timings
	start := time.Now()
	if opts.Timeout == 0 {
		opts.Timeout = 15 * time.Minute
	}
	img := opts.Image
	if img.Kernel.Image == "" {
		roots := opts.KernelRoots
		if roots == nil {
			roots = DefaultKernelRoots
		}
		k, err := FindKernel(opts.KernelImage, roots)
		if err != nil {
			return nil, tm, err
		}
		img.Kernel = k
	}
	if img.Nonce == "" {
		b := make([]byte, 8)
		if _, err := io.ReadFull(rand.Reader, b); err != nil {
			return nil, tm, fmt.Errorf("nonce: %w", err)
		}
		img.Nonce = hex.EncodeToString(b)
	}
	if img.Timeout == 0 {
		img.Timeout = max(opts.Timeout-BootAllowance, opts.Timeout/2)
	}
	dir := opts.WorkDir
	if dir == "" {
		d, err := os.MkdirTemp("", "skiff-vm-")
		if err != nil {
			return nil, tm, fmt.Errorf("work dir: %w", err)
		}
		dir = d
		if !opts.KeepWorkDir {
			defer os.RemoveAll(d)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, tm, fmt.Errorf("work dir: %w", err)
	}

	rootfs, err := BuildRootfs(ctx, img)
	if err != nil {
		return nil, tm, err
	}
	initrd := filepath.Join(dir, "initramfs.cpio")
	if opts.Gzip {
		initrd += ".gz"
	}
	if err := WriteInitramfs(rootfs, initrd, opts.Gzip); err != nil {
		return nil, tm, err
	}
	if fi, err := os.Stat(initrd); err == nil {
		tm.InitramfsBytes = fi.Size()
	}
	tm.Build = time.Since(start)

	m := opts.Machine
	m.Kernel, m.Initrd, m.Nonce = img.Kernel.Image, initrd, img.Nonce
	m.Timeout = max(opts.Timeout-tm.Build, time.Minute)
	res, err := m.Run(ctx)
	tm.addRun(res)
	return res, tm, err
}

// addRun sets Boot, Command and Total from a qemu run's result (nil: the
// run gave none, and the timings stay as they are). Build must be set.
func (tm *Timings) addRun(res *Result) {
	if res == nil {
		return
	}
	tm.Boot = res.Booted
	tm.Command = res.Total - res.Booted
	tm.Total = tm.Build + res.Total
}
