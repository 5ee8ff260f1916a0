package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// systemdGuest holds the recipe of the systemd VM's root disk: the build
// script and the files it copies onto the root (guest/systemd/overlay).
//
//go:embed guest/systemd
var systemdGuest embed.FS

const (
	systemdGuestDir   = "guest/systemd"
	systemdBuildName  = "build-root.sh"
	systemdOverlayDir = "overlay"
)

// DefaultSystemdPackages are installed into the systemd root besides
// debootstrap's minbase: systemd as init with D-Bus and udev (logind is part
// of the systemd package), the container runtime skiff manages (containerd,
// runc, the CNI plugins, iptables for their rules), and the tools the test
// scripts and the runner use.
var DefaultSystemdPackages = []string{
	"systemd", "systemd-sysv", "dbus", "udev", "kmod", "iproute2", "procps",
	"containerd", "runc", "containernetworking-plugins", "iptables",
}

// DefaultMirror is the Debian archive debootstrap fetches from.
const DefaultMirror = "http://deb.debian.org/debian"

// SystemdRoot is the recipe of the systemd VM's root disk; the zero value
// means Debian 12 (bookworm) with DefaultSystemdPackages from the mirror in
// $SKIFF_VM_MIRROR, else the host's apt sources (HostMirror), else
// DefaultMirror.
type SystemdRoot struct {
	Suite    string
	Mirror   string
	Packages []string
}

func (r SystemdRoot) withDefaults() SystemdRoot {
	if r.Suite == "" {
		r.Suite = "bookworm"
	}
	if r.Mirror == "" {
		r.Mirror = os.Getenv("SKIFF_VM_MIRROR")
	}
	if r.Mirror == "" {
		r.Mirror = HostMirror(r.Suite)
	}
	if r.Mirror == "" {
		r.Mirror = DefaultMirror
	}
	if r.Packages == nil {
		r.Packages = DefaultSystemdPackages
	}
	return r
}

// DefaultCacheDir is where built roots are kept: $SKIFF_VM_CACHE, else
// skiff/ in the user's cache directory (~/.cache/skiff).
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("SKIFF_VM_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache directory: %w (set SKIFF_VM_CACHE)", err)
	}
	return filepath.Join(d, "skiff"), nil
}

// systemdRecipeFiles returns the embedded recipe files by their path below
// guest/systemd, with the mode each gets on disk.
func systemdRecipeFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(systemdGuest, systemdGuestDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := systemdGuest.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, systemdGuestDir+"/")] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("systemd root recipe: %w", err)
	}
	return files, nil
}

// recipeMode is the mode of a recipe file on disk: go:embed keeps no modes,
// so the scripts are recognized by their place.
func recipeMode(name string) os.FileMode {
	if name == systemdBuildName || strings.HasPrefix(name, systemdOverlayDir+"/usr/local/lib/skiff-vm/") {
		return 0o755
	}
	return 0o644
}

// SystemdRootKey is the cache key of the root for recipe r and kernel k: a
// hash of the build script, the overlay files, the suite, the packages and
// the kernel version, so that a change to any of them builds a new root.
// The mirror is left out: any mirror serves the same packages. A cached root
// is not refreshed when Debian publishes updates.
func SystemdRootKey(r SystemdRoot, k Kernel) (string, error) {
	r = r.withDefaults()
	files, err := systemdRecipeFiles()
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "suite=%s\npackages=%s\nkernel=%s\n", r.Suite, strings.Join(r.Packages, ","), k.Version)
	for _, n := range names {
		fmt.Fprintf(h, "%s %o %d\n", n, recipeMode(n), len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// EnsureSystemdRoot returns the root disk image (ext4) for recipe r and
// kernel k below cacheDir, building it first when it is missing: about a
// minute with a warm apt cache, a few more on a fresh machine. The image
// is built in a temporary directory and renamed into place, under a lock
// file, so concurrent callers build it once and never see half an image.
// Needs root and debootstrap (test/setup.sh); logf gets progress lines.
func EnsureSystemdRoot(ctx context.Context, cacheDir string, r SystemdRoot, k Kernel, logf func(string, ...any)) (image string, built bool, err error) {
	r = r.withDefaults()
	return ensureSystemdRoot(cacheDir, r, k, logf, func(dir string) error {
		return runBuildScript(ctx, dir, r, k)
	})
}

// ensureSystemdRoot is EnsureSystemdRoot with the build step as a
// parameter: build writes root.img (and whatever else) into a new
// directory, which then becomes the cache entry.
func ensureSystemdRoot(cacheDir string, r SystemdRoot, k Kernel, logf func(string, ...any), build func(dir string) error) (image string, built bool, err error) {
	key, err := SystemdRootKey(r, k)
	if err != nil {
		return "", false, err
	}
	final := filepath.Join(cacheDir, "vm-systemd-"+key)
	image = filepath.Join(final, "root.img")
	if fileExists(image) {
		return image, false, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", false, fmt.Errorf("systemd root cache: %w", err)
	}
	unlock, err := lockFile(filepath.Join(cacheDir, "vm-systemd.lock"))
	if err != nil {
		return "", false, err
	}
	defer unlock()
	if fileExists(image) { // another process built it while we waited
		return image, false, nil
	}
	// Builds that were killed leave their directories; with the lock held
	// none is in progress.
	stale, _ := filepath.Glob(filepath.Join(cacheDir, ".vm-systemd-build-*"))
	for _, dir := range stale {
		if err := os.RemoveAll(dir); err != nil {
			logf("removing the stale systemd VM root build %s: %v", dir, err)
		}
	}
	start := time.Now()
	logf("building the systemd VM root %s (debootstrap %s from %s)", final, r.Suite, r.Mirror)
	if err := buildInto(cacheDir, final, build); err != nil {
		return "", false, err
	}
	logf("built the systemd VM root in %s", time.Since(start).Round(time.Second))
	pruneSystemdRoots(cacheDir, final, logf)
	return image, true, nil
}

// buildInto runs build in a temporary directory next to final and renames
// it to final (replacing a final without root.img) when build succeeds and
// wrote root.img; otherwise it leaves nothing behind.
func buildInto(cacheDir, final string, build func(dir string) error) error {
	tmp, err := os.MkdirTemp(cacheDir, ".vm-systemd-build-")
	if err != nil {
		return fmt.Errorf("systemd root: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	if err := build(tmp); err != nil {
		return err
	}
	if !fileExists(filepath.Join(tmp, "root.img")) {
		return errors.New("systemd root: the build wrote no root.img")
	}
	if err := os.RemoveAll(final); err != nil {
		return fmt.Errorf("systemd root: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("systemd root: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("systemd root: %w", err)
	}
	return nil
}

// runBuildScript writes the recipe into tmp and runs build-root.sh, which
// leaves tmp/root.img; its output is kept as tmp/build.log.
func runBuildScript(ctx context.Context, tmp string, r SystemdRoot, k Kernel) error {
	files, err := systemdRecipeFiles()
	if err != nil {
		return err
	}
	recipe := filepath.Join(tmp, "recipe")
	for name, data := range files {
		p := filepath.Join(recipe, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("systemd root recipe: %w", err)
		}
		if err := os.WriteFile(p, data, recipeMode(name)); err != nil {
			return fmt.Errorf("systemd root recipe: %w", err)
		}
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(recipe, systemdBuildName),
		filepath.Join(tmp, "root.img"), r.Suite, r.Mirror, strings.Join(r.Packages, ","),
		k.ModulesDir, filepath.Join(recipe, systemdOverlayDir))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build systemd root (%s): %w; output:\n%s", systemdBuildName, err, tail(out.String(), 40))
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.log"), out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("systemd root: %w", err)
	}
	if err := os.RemoveAll(recipe); err != nil {
		return fmt.Errorf("systemd root: %w", err)
	}
	return nil
}

// pruneSystemdRoots removes the roots of other recipes from cacheDir (each
// is about half a GiB): a machine keeps the root of the recipe it last
// built. Called with the lock held; failures are only logged.
func pruneSystemdRoots(cacheDir, keep string, logf func(string, ...any)) {
	old, _ := filepath.Glob(filepath.Join(cacheDir, "vm-systemd-*"))
	for _, dir := range old {
		if dir == keep {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			logf("removing the old systemd VM root %s: %v", dir, err)
		}
	}
}

// lockFile takes an exclusive flock on file, waiting for it; the returned
// function releases it.
func lockFile(file string) (func(), error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", file, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", file, err)
	}
	return func() { f.Close() }, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// guestPath joins a guest absolute path below a host directory.
func guestPath(dir, guest string) string {
	return filepath.Join(dir, filepath.FromSlash(path.Clean("/"+guest)))
}
