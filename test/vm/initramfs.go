package vm

import (
	"compress/gzip"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The guest's init scripts (see guest/).
var (
	//go:embed guest/init.sh
	stage1Script []byte
	//go:embed guest/stage2.sh
	stage2Script []byte
)

// DefaultModules are loaded at boot, dependencies first: overlayfs for the
// snapshotter, veth and bridge for the CNI bridge plugin, a dummy node
// interface, and the nf_tables/x_tables pieces iptables-nft needs for the
// portmap plugin's rules. Names the kernel has built in, or lacks, are
// skipped.
var DefaultModules = []string{
	"overlay", "veth", "bridge", "br_netfilter", "dummy",
	"nf_tables", "nft_compat", "nft_chain_nat", "nft_nat", "nft_masq", "nft_ct",
	"xt_addrtype", "xt_comment", "xt_conntrack", "xt_mark", "xt_multiport",
	"xt_nat", "xt_MASQUERADE", "xt_tcpudp",
}

// DefaultModuleDirs are module trees (relative to /lib/modules/<version>)
// copied whole, so the kernel can load what else it asks for on demand.
var DefaultModuleDirs = []string{
	"kernel/net/netfilter", "kernel/net/ipv4/netfilter", "kernel/net/ipv6/netfilter",
	"kernel/net/bridge", "kernel/fs/overlayfs",
}

// Add copies a host file or directory into the guest.
type Add struct {
	// Host is the file or directory on the host.
	Host string
	// Guest is its absolute path in the guest.
	Guest string
}

// ParseAdd parses "HOST[:GUEST]"; without GUEST the file keeps its absolute
// host path.
func ParseAdd(s string) (Add, error) {
	host, guest, _ := strings.Cut(s, ":")
	if host == "" {
		return Add{}, fmt.Errorf("add %q: empty host path", s)
	}
	abs, err := filepath.Abs(host)
	if err != nil {
		return Add{}, fmt.Errorf("add %q: %w", s, err)
	}
	if guest == "" {
		guest = abs
	}
	if !strings.HasPrefix(guest, "/") {
		return Add{}, fmt.Errorf("add %q: guest path must be absolute", s)
	}
	return Add{Host: abs, Guest: guest}, nil
}

// Image describes the guest: what goes into its root file system and what
// it runs.
type Image struct {
	// Kernel is the kernel whose modules go into the image.
	Kernel Kernel
	// Command is the program and arguments to run (required). A program
	// without a slash is looked up in the guest's PATH.
	Command []string
	// Env holds KEY=VALUE pairs set for the command.
	Env []string
	// Workdir is the command's working directory (default /).
	Workdir string
	// Adds are host files and directories to copy in.
	Adds []Add
	// Modules are loaded at boot (nil: DefaultModules); ModuleDirs are
	// included for on-demand loading (nil: DefaultModuleDirs).
	Modules, ModuleDirs []string
	// NoRuntime leaves out containerd, runc, the CNI plugins and iptables.
	NoRuntime bool
	// Timeout bounds the command inside the guest (whole seconds).
	Timeout time.Duration
	// Nonce tags the guest's marker lines so that command output cannot
	// fake them.
	Nonce string
	// Hostname of the guest (default skiff-vm).
	Hostname string
	// Logf receives warnings (default: discard).
	Logf func(format string, args ...any)
}

// BuildRootfs assembles the guest root file system for img.
func BuildRootfs(ctx context.Context, img Image) (*Rootfs, error) {
	if len(img.Command) == 0 {
		return nil, errors.New("build rootfs: no command")
	}
	if img.Logf == nil {
		img.Logf = func(string, ...any) {}
	}
	r := NewRootfs()
	steps := []func(context.Context, *Rootfs, Image) error{addBusybox, addEtc, addModules, addInit}
	if !img.NoRuntime {
		steps = append(steps, addContainerRuntime, addCNI, addIptables)
	}
	for _, step := range steps {
		if err := step(ctx, r, img); err != nil {
			return nil, fmt.Errorf("build rootfs: %w", err)
		}
	}
	// User files last: they may replace anything above.
	for _, a := range img.Adds {
		if err := r.Add(a.Guest, a.Host); err != nil {
			return nil, fmt.Errorf("build rootfs: %w", err)
		}
		if err := addLibsOfTree(ctx, r, a.Host); err != nil {
			return nil, fmt.Errorf("build rootfs: %w", err)
		}
	}
	return r, nil
}

// addLibsOfTree adds the shared libraries of every dynamically linked
// executable or library at or below host.
func addLibsOfTree(ctx context.Context, r *Rootfs, host string) error {
	var files []string
	err := filepath.WalkDir(host, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&0o111 != 0 || strings.Contains(d.Name(), ".so") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan %s: %w", host, err)
	}
	return r.AddLibsOf(ctx, files...)
}

// addBusybox adds a static busybox with a link for each of its applets.
func addBusybox(ctx context.Context, r *Rootfs, _ Image) error {
	bin, err := lookPath("busybox")
	if err != nil {
		return fmt.Errorf("%w (package busybox-static)", err)
	}
	const guestBin = "/usr/bin/busybox"
	if err := r.AddExecutable(ctx, guestBin, bin); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("busybox --list-full: %w", err)
	}
	self, _ := clean(guestBin)
	for _, applet := range strings.Fields(string(out)) {
		// "bin/busybox" names the binary itself (usr/bin/busybox once
		// merged-/usr is applied): a link there would replace it.
		if p, err := clean("/" + applet); err != nil || p == self {
			continue
		}
		if err := r.AddSymlink("/"+applet, guestBin); err != nil {
			return err
		}
	}
	return nil
}

// addEtc writes the few configuration files programs expect.
func addEtc(_ context.Context, r *Rootfs, img Image) error {
	host := img.Hostname
	if host == "" {
		host = "skiff-vm"
	}
	files := map[string]string{
		"/etc/passwd":        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"/etc/group":         "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n",
		"/etc/hosts":         "127.0.0.1 localhost\n10.0.2.15 " + host + "\n::1 localhost ip6-localhost ip6-loopback\n",
		"/etc/resolv.conf":   "nameserver 10.0.2.3\n",
		"/etc/nsswitch.conf": "hosts: files dns\n",
		"/etc/hostname":      host + "\n",
	}
	for name, content := range files {
		if err := r.AddBytes(name, []byte(content), 0o644); err != nil {
			return err
		}
	}
	// Name databases iptables and friends read, when the host has them.
	for _, name := range []string{"/etc/protocols", "/etc/services", "/etc/ethertypes"} {
		if _, err := os.Stat(name); err == nil {
			if err := r.AddFile(name, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// addModules adds the kernel modules, their dependencies and a module
// index restricted to them, plus the boot-time load list.
func addModules(_ context.Context, r *Rootfs, img Image) error {
	mods, err := LoadModules(img.Kernel.ModulesDir)
	if err != nil {
		return err
	}
	names := img.Modules
	if names == nil {
		names = DefaultModules
	}
	dirs := img.ModuleDirs
	if dirs == nil {
		dirs = DefaultModuleDirs
	}
	load, builtin, missing := mods.Resolve(names)
	if len(missing) > 0 {
		img.Logf("kernel %s has neither a module nor a built-in for: %s", img.Kernel.Version, strings.Join(missing, " "))
	}
	_ = builtin // built in: nothing to load
	all := mods.Closure(append(mods.UnderDirs(dirs), load...))
	guestDir := "/lib/modules/" + img.Kernel.Version
	for _, mod := range all {
		if err := r.AddFile(path.Join(guestDir, mod), filepath.Join(mods.Dir, mod)); err != nil {
			return err
		}
	}
	alias, err := mods.aliasFile(all)
	if err != nil {
		return err
	}
	generated := map[string][]byte{
		"modules.dep":   mods.depFile(all),
		"modules.alias": alias,
		"modules":       []byte(strings.Join(load, "\n") + "\n"),
	}
	for name, data := range generated {
		dst := path.Join(guestDir, name)
		if name == "modules" {
			dst = "/etc/vmrun/modules"
		}
		if err := r.AddBytes(dst, data, 0o644); err != nil {
			return err
		}
	}
	for _, name := range []string{"modules.builtin", "modules.builtin.modinfo", "modules.order", "modules.softdep"} {
		if src := filepath.Join(mods.Dir, name); fileExists(src) {
			if err := r.AddFile(path.Join(guestDir, name), src); err != nil {
				return err
			}
		}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// envKey is what a shell accepts as a variable name.
var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// addInit adds the init scripts, their configuration and the command.
func addInit(_ context.Context, r *Rootfs, img Image) error {
	if !regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(img.Nonce) {
		return fmt.Errorf("nonce %q: want letters, digits, '.', '_' or '-'", img.Nonce)
	}
	secs := int64(img.Timeout / time.Second)
	if secs <= 0 {
		return fmt.Errorf("command timeout %s: want at least 1s", img.Timeout)
	}
	host := img.Hostname
	if host == "" {
		host = "skiff-vm"
	}
	config := fmt.Sprintf("VMRUN_NONCE=%s\nVMRUN_TIMEOUT=%d\nVMRUN_HOSTNAME=%s\n",
		shellQuote(img.Nonce), secs, shellQuote(host))
	run, err := runScript(img)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		guest string
		data  []byte
		perm  uint32
	}{
		{"/init", stage1Script, 0o755},
		{"/sbin/vm-init", stage2Script, 0o755},
		{"/etc/vmrun/config", []byte(config), 0o644},
		{"/etc/vmrun/run.sh", run, 0o755},
	} {
		if err := r.AddBytes(f.guest, f.data, f.perm); err != nil {
			return err
		}
	}
	return nil
}

// runScript renders /etc/vmrun/run.sh: change to the working directory,
// export the environment, exec the command.
func runScript(img Image) ([]byte, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Generated by test/vm: the command to run in the guest.\n")
	wd := img.Workdir
	if wd == "" {
		wd = "/"
	}
	if !strings.HasPrefix(wd, "/") {
		return nil, fmt.Errorf("workdir %q is not absolute", wd)
	}
	fmt.Fprintf(&b, "cd %s || exit 126\n", shellQuote(wd))
	for _, kv := range img.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !envKey.MatchString(k) {
			return nil, fmt.Errorf("environment %q: want KEY=VALUE", kv)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	b.WriteString("exec")
	for _, a := range img.Command {
		b.WriteString(" ")
		b.WriteString(shellQuote(a))
	}
	b.WriteString("\n")
	return []byte(b.String()), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteInitramfs writes r as a cpio archive to file, gzip-compressed when
// gz is set (the kernel unpacks either; uncompressed is faster to build and
// to unpack under TCG, gzip is smaller).
func WriteInitramfs(r *Rootfs, file string, gz bool) (err error) {
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("write initramfs: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write initramfs: %w", cerr)
		}
	}()
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw, err = gzip.NewWriterLevel(f, gzip.BestSpeed)
		if err != nil {
			return fmt.Errorf("write initramfs: %w", err)
		}
		w = zw
	}
	if err := r.WriteCPIO(w); err != nil {
		return fmt.Errorf("write initramfs %s: %w", file, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("write initramfs: %w", err)
		}
	}
	return nil
}
