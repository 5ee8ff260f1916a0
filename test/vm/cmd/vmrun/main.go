// Command vmrun runs a command inside a throwaway cgroup v2 QEMU VM (see
// package test/vm) and exits with the command's status.
//
//	go run ./test/vm/cmd/vmrun [flags] -- COMMAND [ARG...]
//
// Host files go in with -add HOST[:GUEST]; the environment of the command
// with -env KEY=VALUE. The serial console streams to stderr (unless -quiet)
// and to -log. When the guest reports no result (it panicked, did not boot,
// or the run timed out) vmrun prints the console tail and exits with 125.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/skiffnode/skiff/test/vm"
)

// exitNoResult is the status when the VM reported no result or vmrun
// itself failed.
const exitNoResult = 125

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// config is the parsed command line.
type config struct {
	opts      vm.Options
	log       string
	quiet     bool
	requireV2 []string
	// systemd boots the systemd VM (vm.RunSystemd) instead of the
	// initramfs one; powerOff is its option. disk is its root disk, and
	// the initramfs VM's scratch disk (/dev/nvme0n1).
	systemd  bool
	disk     string
	powerOff string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the VM and returns the exit status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "vmrun:", err)
		return 2
	}
	if cfg.log != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.log), 0o755); err != nil {
			fmt.Fprintln(stderr, "vmrun:", err)
			return exitNoResult
		}
		cfg.opts.Machine.Log = cfg.log
	}
	if !cfg.quiet {
		cfg.opts.Machine.Console = stderr
	}
	cfg.opts.Image.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "vmrun: "+format+"\n", a...) }
	res, tm, err := runVM(ctx, cfg)
	built := fmt.Sprintf("initramfs %d MiB built in %s", tm.InitramfsBytes>>20, tm.Build.Round(time.Millisecond))
	if cfg.systemd {
		built = fmt.Sprintf("disks ready in %s (root built in %s)", tm.Build.Round(time.Millisecond), tm.Root.Round(time.Second))
	}
	fmt.Fprintf(stderr, "vmrun: %s; boot %s; command %s; total %s\n", built,
		tm.Boot.Round(time.Millisecond), tm.Command.Round(time.Millisecond), tm.Total.Round(time.Millisecond))
	if cfg.log != "" {
		fmt.Fprintf(stderr, "vmrun: console log: %s\n", cfg.log)
	}
	if err != nil {
		fmt.Fprintln(stderr, "vmrun:", err)
		return exitNoResult
	}
	if res.BootLine != "" {
		fmt.Fprintf(stderr, "vmrun: guest: %s\n", res.Boot)
	}
	if len(cfg.requireV2) > 0 {
		if err := res.Boot.RequireCgroup2(cfg.requireV2); err != nil {
			fmt.Fprintln(stderr, "vmrun:", err)
			return exitNoResult
		}
	}
	if res.Reason != "" {
		fmt.Fprintf(stderr, "vmrun: guest command failed (%s), status %d; last console lines:\n%s\n",
			res.Reason, res.RC, strings.Join(res.Tail, "\n"))
	} else {
		fmt.Fprintf(stderr, "vmrun: guest command exited with status %d\n", res.RC)
	}
	return res.RC
}

// runVM runs the initramfs VM, or the systemd VM with the same command,
// files, machine and kernel.
func runVM(ctx context.Context, cfg config) (*vm.Result, vm.Timings, error) {
	if !cfg.systemd {
		if cfg.disk != "" {
			cfg.opts.Machine.Disks = []vm.Disk{{File: cfg.disk}}
		}
		return vm.Run(ctx, cfg.opts)
	}
	o := cfg.opts
	return vm.RunSystemd(ctx, vm.SystemdOptions{
		Command: o.Image.Command, Env: o.Image.Env, Workdir: o.Image.Workdir, Adds: o.Image.Adds,
		Disk: cfg.disk, PowerOff: vm.PowerOff(cfg.powerOff),
		KernelImage: o.KernelImage, Machine: o.Machine, Timeout: o.Timeout,
		WorkDir: o.WorkDir, KeepWorkDir: o.KeepWorkDir, Logf: o.Image.Logf,
	})
}

// parse reads the flags and the command after them.
func parse(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("vmrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: vmrun [flags] -- COMMAND [ARG...]")
		fs.PrintDefaults()
	}
	var adds, env, kargs listFlag
	var require string
	fs.Var(&adds, "add", "copy HOST[:GUEST] into the guest (repeatable; GUEST defaults to HOST's absolute path)")
	fs.Var(&env, "env", "KEY=VALUE for the command (repeatable)")
	fs.Var(&kargs, "kernel-arg", "extra kernel command-line argument (repeatable)")
	fs.StringVar(&cfg.opts.Image.Workdir, "workdir", "/", "the command's working directory in the guest")
	fs.DurationVar(&cfg.opts.Timeout, "timeout", 14*time.Minute, "bound on the whole run (the command gets this less 2m)")
	fs.IntVar(&cfg.opts.Machine.MemoryMiB, "mem", 3072, "guest memory in MiB (the root file system lives in it)")
	fs.IntVar(&cfg.opts.Machine.CPUs, "smp", 2, "virtual CPUs")
	fs.StringVar(&cfg.opts.Machine.QEMU, "qemu", "qemu-system-x86_64", "the emulator")
	fs.StringVar(&cfg.opts.KernelImage, "kernel", "", "vmlinuz to boot (default: the newest "+vm.KernelPattern+" below "+strings.Join(vm.DefaultKernelRoots, " or ")+")")
	fs.StringVar(&cfg.log, "log", "_output/vm/console.log", "file for the serial console (empty: none)")
	fs.BoolVar(&cfg.quiet, "quiet", false, "do not stream the console to stderr")
	fs.BoolVar(&cfg.opts.Gzip, "gzip", false, "gzip the initramfs")
	fs.StringVar(&cfg.opts.WorkDir, "workdir-host", "", "host directory for the initramfs (default: a temporary one)")
	fs.BoolVar(&cfg.opts.KeepWorkDir, "keep", false, "keep the temporary host directory")
	fs.BoolVar(&cfg.opts.Image.NoRuntime, "no-runtime", false, "leave out containerd, runc, CNI plugins and iptables")
	fs.BoolVar(&cfg.systemd, "systemd", false,
		"boot the systemd VM (a cached debootstrap'ed Debian 12 root, systemd as PID 1; the first run builds it, as root) instead of the initramfs one")
	fs.StringVar(&cfg.disk, "disk", "", "with -systemd: the root disk file, created from the cached root when missing and kept (default: a throwaway snapshot); "+
		"without: a raw disk image the guest sees as /dev/nvme0n1, written to (e.g. an ext4 scratch file system: the initramfs root is a tmpfs)")
	fs.StringVar(&cfg.powerOff, "poweroff", "systemctl", "with -systemd: how the machine stops after the command: systemctl, force or none")
	fs.StringVar(&require, "require-cgroup2", "",
		"comma-separated controllers the guest must report enabled on a cgroup2 root (e.g. cpu,memory,pids); else fail")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.opts.Image.Command = fs.Args()
	if len(cfg.opts.Image.Command) == 0 {
		fs.Usage()
		return cfg, errors.New("no command given")
	}
	for _, a := range adds {
		add, err := vm.ParseAdd(a)
		if err != nil {
			return cfg, err
		}
		cfg.opts.Image.Adds = append(cfg.opts.Image.Adds, add)
	}
	cfg.opts.Image.Env = env
	cfg.opts.Machine.Append = kargs
	if require != "" {
		cfg.requireV2 = strings.Split(require, ",")
	}
	return cfg, nil
}
