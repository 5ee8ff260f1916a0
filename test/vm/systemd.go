package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// SystemdCmdline is the kernel command line of the systemd VM: the root on
// the first NVMe namespace (built in: no initramfs needed), systemd as init
// on the unified cgroup hierarchy, the serial console with systemd's unit
// status lines (what started, what a stop job waits for: the console log is
// what a failed test shows), and the TCG speed-ups of BaseCmdline
// (tsc=reliable, mitigations=off).
var SystemdCmdline = []string{
	"console=ttyS0", "quiet", "panic=-1", "mitigations=off", "tsc=reliable", "printk.devkmsg=on",
	"root=/dev/nvme0n1", "rootwait", "rw", "rootfstype=ext4", "init=/lib/systemd/systemd",
	"systemd.unified_cgroup_hierarchy=1", "systemd.show_status=true", "net.ifnames=0",
	"random.trust_cpu=on",
}

// PowerOff is how the systemd VM's runner stops the machine after the
// command.
type PowerOff string

const (
	// PowerOffSystemd runs `systemctl poweroff`: units stop in order, as on
	// a real node (the default).
	PowerOffSystemd PowerOff = "systemctl"
	// PowerOffForce runs `poweroff -f`: no unit is stopped.
	PowerOffForce PowerOff = "force"
	// PowerOffNone leaves the machine running (until the run's timeout).
	PowerOffNone PowerOff = "none"
)

// SystemdOptions configure RunSystemd.
type SystemdOptions struct {
	// Command runs (as root, through /bin/sh's exec) once the boot is done;
	// Env and Workdir as in Image.
	Command []string
	Env     []string
	Workdir string
	// Adds are copied onto the guest's / before the command, after which
	// the runner calls `systemctl daemon-reload` (so units added under
	// /etc/systemd/system are known). They travel on a second disk.
	Adds []Add
	// Root is the recipe of the root disk; CacheDir keeps the built root
	// (default DefaultCacheDir()).
	Root     SystemdRoot
	CacheDir string
	// Disk, when set, is the root disk file of this run: created from the
	// cached root when missing, kept afterwards, so a second RunSystemd
	// with the same Disk boots what the first left behind (e.g. a marker a
	// pod wrote while the machine powered off). Empty: a throwaway
	// copy-on-write snapshot of the cached root.
	Disk string
	// PowerOff is how the machine stops after the command (default
	// PowerOffSystemd).
	PowerOff PowerOff
	// KernelImage and KernelRoots select the kernel as in Options.
	KernelImage string
	KernelRoots []string
	// Machine configures qemu; its Kernel, Cmdline, Disks, Nonce and
	// Timeout are filled in (Append and the rest are the caller's).
	Machine Machine
	// Timeout bounds the whole run, building the root included (default
	// 15m); CommandTimeout bounds the command in the guest (default
	// Timeout less BootAllowance); BootTimeout bounds the boot, until the
	// runner's boot marker (default 5m).
	Timeout, CommandTimeout, BootTimeout time.Duration
	// WorkDir holds the data disk; empty: a temporary directory, removed
	// afterwards unless KeepWorkDir.
	WorkDir     string
	KeepWorkDir bool
	// Logf receives progress lines (default: discard).
	Logf func(format string, args ...any)
}

// RunSystemd boots the systemd VM, a Debian 12 root with systemd as PID 1
// (see guest/systemd), and runs opts.Command in it: the unit
// skiff-vm-test.service waits for `systemctl is-system-running --wait`,
// prints the boot marker (Result.Boot has the system state and PID 1's
// name), runs the command, prints the result marker and powers off. The
// first call on a machine builds the root (EnsureSystemdRoot; needs root
// and debootstrap). The error wraps ErrNoResult when the guest reported no
// result.
func RunSystemd(ctx context.Context, opts SystemdOptions) (*Result, Timings, error) {
	var tm Timings
	start := time.Now()
	opts = opts.withDefaults()
	if len(opts.Command) == 0 {
		return nil, tm, errors.New("systemd VM: no command")
	}
	roots := opts.KernelRoots
	if roots == nil {
		roots = DefaultKernelRoots
	}
	k, err := FindKernel(opts.KernelImage, roots)
	if err != nil {
		return nil, tm, err
	}
	if opts.CacheDir == "" {
		if opts.CacheDir, err = DefaultCacheDir(); err != nil {
			return nil, tm, err
		}
	}
	base, built, err := EnsureSystemdRoot(ctx, opts.CacheDir, opts.Root, k, opts.Logf)
	if err != nil {
		return nil, tm, err
	}
	if built {
		tm.Root = time.Since(start)
	}
	dir, cleanup, err := workDir(opts.WorkDir, opts.KeepWorkDir)
	if err != nil {
		return nil, tm, err
	}
	defer cleanup()
	nonce, err := newNonce()
	if err != nil {
		return nil, tm, err
	}
	rootDisk := Disk{File: base, Snapshot: true}
	if opts.Disk != "" {
		if err := copyDiskOnce(ctx, base, opts.Disk); err != nil {
			return nil, tm, err
		}
		rootDisk = Disk{File: opts.Disk}
	}
	data := filepath.Join(dir, "data.img")
	if err := writeDataDisk(ctx, data, filepath.Join(dir, "data"), opts, nonce); err != nil {
		return nil, tm, err
	}
	tm.Build = time.Since(start)

	m := opts.Machine
	m.Kernel, m.Initrd, m.Cmdline, m.Nonce = k.Image, "", SystemdCmdline, nonce
	m.Disks = []Disk{rootDisk, {File: data}}
	m.BootTimeout = opts.BootTimeout
	m.Timeout = max(opts.Timeout-tm.Build, time.Minute)
	res, err := m.Run(ctx)
	tm.addRun(res)
	return res, tm, err
}

func (o SystemdOptions) withDefaults() SystemdOptions {
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = max(o.Timeout-BootAllowance, o.Timeout/2)
	}
	if o.BootTimeout == 0 {
		o.BootTimeout = 5 * time.Minute
	}
	if o.PowerOff == "" {
		o.PowerOff = PowerOffSystemd
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// workDir returns dir (created) or a new temporary directory, and the
// function that removes a temporary one unless keep.
func workDir(dir string, keep bool) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("work dir: %w", err)
		}
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "skiff-vm-")
	if err != nil {
		return "", nil, fmt.Errorf("work dir: %w", err)
	}
	if keep {
		return d, func() {}, nil
	}
	return d, func() { os.RemoveAll(d) }, nil
}

func newNonce() (string, error) {
	b := make([]byte, 8)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// copyDiskOnce copies the base image to disk (sparse) unless disk exists.
func copyDiskOnce(ctx context.Context, base, disk string) error {
	if fileExists(disk) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(disk), 0o755); err != nil {
		return fmt.Errorf("root disk: %w", err)
	}
	tmp := disk + ".tmp"
	if out, err := exec.CommandContext(ctx, "cp", "--sparse=always", base, tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("root disk: cp %s: %w: %s", base, err, out)
	}
	if err := os.Rename(tmp, disk); err != nil {
		return fmt.Errorf("root disk: %w", err)
	}
	return nil
}

// powerOffRE keeps the config file's values plain.
var powerOffRE = regexp.MustCompile(`^(systemctl|force|none)$`)

// writeDataDisk writes the data disk the guest's runner reads (see
// guest/systemd/overlay/usr/local/lib/skiff-vm/run): config, run.sh and the
// added files below root/, staged in stage and written with mkfs.ext4 -d.
func writeDataDisk(ctx context.Context, image, stage string, opts SystemdOptions, nonce string) error {
	if !powerOffRE.MatchString(string(opts.PowerOff)) {
		return fmt.Errorf("systemd VM: power-off %q: want systemctl, force or none", opts.PowerOff)
	}
	secs := int64(opts.CommandTimeout / time.Second)
	if secs <= 0 {
		return fmt.Errorf("systemd VM: command timeout %s: want at least 1s", opts.CommandTimeout)
	}
	if err := os.RemoveAll(stage); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	run, err := runScript(Image{Command: opts.Command, Env: opts.Env, Workdir: opts.Workdir})
	if err != nil {
		return fmt.Errorf("systemd VM: %w", err)
	}
	config := fmt.Sprintf("VMRUN_NONCE=%s\nVMRUN_TIMEOUT=%d\nVMRUN_POWEROFF=%s\n", shellQuote(nonce), secs, opts.PowerOff)
	if err := os.WriteFile(filepath.Join(stage, "config"), []byte(config), 0o644); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, "run.sh"), run, 0o755); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	for _, a := range opts.Adds {
		if err := copyTree(a.Host, guestPath(filepath.Join(stage, "root"), a.Guest)); err != nil {
			return fmt.Errorf("data disk: add %s: %w", a.Host, err)
		}
	}
	size, err := treeSize(stage)
	if err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	// ext4's metadata and some room for what the guest writes there.
	size = size + size/5 + 64<<20
	if err := os.Remove(image); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("data disk: %w", err)
	}
	f, err := os.Create(image)
	if err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-L", "skiffvm-data", "-d", stage, image).CombinedOutput()
	if err != nil {
		return fmt.Errorf("data disk: mkfs.ext4 (package e2fsprogs): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
