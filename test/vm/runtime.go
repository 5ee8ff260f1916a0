package vm

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// runtimePrograms are the container runtime executables skiff's managed
// containerd needs: the initramfs takes them from the host's PATH and places
// them at the same path in the guest (whose PATH has the same directories);
// AddBundledRuntime takes skiff's own (make runtime, the same names as
// runtime/containerd.BundledPrograms) from one directory.
var runtimePrograms = []string{"containerd", "containerd-shim-runc-v2", "runc"}

// cniDir is where Debian's containernetworking-plugins install, and the
// default of skiff's --cni-bin-dir.
const cniDir = "/usr/lib/cni"

// iptablesNames are the commands the CNI plugins may call; in Debian they
// are all one multi-call binary (xtables-nft-multi or xtables-legacy-multi).
var iptablesNames = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// addContainerRuntime adds containerd, its runc shim and runc with their
// shared libraries (runc links libseccomp).
func addContainerRuntime(ctx context.Context, r *Rootfs, _ Image) error {
	for _, name := range runtimePrograms {
		bin, err := lookPath(name)
		if err != nil {
			return err
		}
		if err := r.AddExecutable(ctx, bin, bin); err != nil {
			return err
		}
	}
	return nil
}

// AddBundledRuntime adds skiff's own runtime, the runtimePrograms that
// `make runtime` puts in dir (bin/), at guestDir, each with the shared
// libraries it needs (none: the three are static). skiff's managed mode
// finds them beside its executable or in <its directory>/../lib/skiff. It
// fails, naming make runtime, when dir lacks one of them.
func AddBundledRuntime(ctx context.Context, r *Rootfs, guestDir, dir string) error {
	for _, name := range runtimePrograms {
		src := filepath.Join(dir, name)
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("skiff's runtime: %w (make runtime)", err)
		}
		if err := r.AddExecutable(ctx, path.Join(guestDir, name), src); err != nil {
			return fmt.Errorf("skiff's runtime: %w", err)
		}
	}
	return nil
}

// addCNI adds the CNI plugin directory with the plugins' libraries.
func addCNI(ctx context.Context, r *Rootfs, _ Image) error {
	if _, err := os.Stat(cniDir); err != nil {
		return fmt.Errorf("CNI plugins: %w (package containernetworking-plugins)", err)
	}
	if err := r.AddTree(cniDir, cniDir); err != nil {
		return err
	}
	return addLibsOfTree(ctx, r, cniDir)
}

// addIptables adds the iptables multi-call binary under its command names,
// its libraries, and its extension directory (loaded with dlopen, so ldd
// does not see it).
func addIptables(ctx context.Context, r *Rootfs, _ Image) error {
	link, err := lookPath("iptables")
	if err != nil {
		return fmt.Errorf("%w (package iptables)", err)
	}
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", link, err)
	}
	if err := r.AddExecutable(ctx, real, real); err != nil {
		return err
	}
	dir := path.Dir(real)
	for _, name := range iptablesNames {
		if p := path.Join(dir, name); p != real {
			if err := r.AddSymlink(p, path.Base(real)); err != nil {
				return err
			}
		}
	}
	exts, err := xtablesDirs()
	if err != nil {
		return err
	}
	for _, ext := range exts {
		if err := r.AddTree(ext, ext); err != nil {
			return err
		}
		if err := addLibsOfTree(ctx, r, ext); err != nil {
			return err
		}
	}
	return nil
}

// xtablesDirs returns the iptables extension directories of the host
// (/usr/lib/<triplet>/xtables on Debian).
func xtablesDirs() ([]string, error) {
	var dirs []string
	for _, pattern := range []string{"/usr/lib/*/xtables", "/usr/lib/xtables", "/usr/lib64/xtables"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, fmt.Errorf("find iptables extensions: %w", err)
		}
		dirs = append(dirs, m...)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no iptables extension directory (/usr/lib/*/xtables) found")
	}
	return dirs, nil
}
