package volumes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's subPath CVEs, attempted against skiff's volumes package:
//
//   - CVE-2017-1002101 (kubernetes#60813): a subPath that is, or passes
//     through, a symlink a container planted in its volume, pointing out
//     of the volume, mounted the host's files.
//   - CVE-2021-25741 (kubernetes#104980): the same symlink swapped in
//     after the kubelet's check and before the runtime's mount.
//
// See docs/security-tests.md.

// escapeVolume is a volume with the symlinks a container could plant in
// it, and a directory outside it holding a secret.
func escapeVolume(t *testing.T) (vol, outside string) {
	t.Helper()
	vol, outside = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"d", "real/nested"} {
		if err := os.MkdirAll(filepath.Join(vol, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"abs":         outside,                                 // an absolute link out
		"rel":         strings.Repeat("../", 20) + outside[1:], // a relative one
		"d/up":        "..",                                    // inside: the volume root
		"d/loop":      "../d/up/../abs",                        // out, through inside links
		"secret-file": filepath.Join(outside, "secret"),        // a host file
		"inside":      "real/nested",                           // inside: allowed
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	return vol, outside
}

// TestSubPathSymlinkEscape_CVE_2017_1002101: every subPath that leaves
// the volume through a symlink, or by its own words (absolute, ".."), is
// refused; nothing is created outside; links that stay inside resolve.
func TestSubPathSymlinkEscape_CVE_2017_1002101(t *testing.T) {
	vol, outside := escapeVolume(t)
	for _, sub := range []string{
		"abs", "abs/secret", "abs/new/dir", "rel", "rel/secret", "d/loop", "d/loop/secret",
		"secret-file", "d/up/abs", "/etc", "../x", "d/../../x",
	} {
		if got, err := SubPath(vol, sub); err == nil {
			t.Errorf("SubPath(%q) = %q, want refused", sub, got)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside the volume: %v, want only the secret (nothing created)", entries)
	}
	for sub, want := range map[string]string{"inside": "real/nested", "d/up/real": "real", "d/new": "d/new"} {
		if got, err := SubPath(vol, sub); err != nil || got != filepath.Join(vol, want) {
			t.Errorf("SubPath(%q) = %q, %v; want %s", sub, got, err, filepath.Join(vol, want))
		}
	}
}

// TestSubPathMountPinned_CVE_2021_25741 (root): the subPath a container
// mounts is a bind mount of the file opened when it was checked. A
// symlink swapped in between the check and the open fails the mount; one
// swapped in after it changes nothing; TearDown unmounts the pin without
// deleting through it.
func TestSubPathMountPinned_CVE_2021_25741(t *testing.T) {
	needRoot(t)
	m := newTestManager(t, nil)
	uid := types.UID("cve-2021-25741")
	vol, outside := escapeVolume(t)
	for _, d := range []string{"pinned", "raced"} {
		if err := os.WriteFile(filepath.Join(vol, "d", d), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// swap replaces vol/d with a symlink out of the volume (keeping d's
	// content at d.orig), as a container sharing the volume can.
	swap := func() {
		if err := os.Rename(filepath.Join(vol, "d"), filepath.Join(vol, "d.orig")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, "d")); err != nil {
			t.Fatal(err)
		}
	}
	unswap := func() {
		if err := errors.Join(os.Remove(filepath.Join(vol, "d")), os.Rename(filepath.Join(vol, "d.orig"), filepath.Join(vol, "d"))); err != nil {
			t.Fatal(err)
		}
	}

	// The race: the symlink is swapped in after the check.
	m.afterSubPathCheck = swap
	if got, err := m.SubPathMount(uid, "vol", "app", 0, vol, "d"); err == nil {
		t.Errorf("SubPathMount with d swapped after the check = %q, want refused", got)
	} else if !strings.Contains(err.Error(), "symlink") {
		t.Errorf("SubPathMount with d swapped after the check: %v, want the symlink named", err)
	}
	m.afterSubPathCheck = nil
	unswap()
	if mps, _ := mountsUnder(m.mountInfo, m.PodDir(uid)); len(mps) != 0 {
		t.Errorf("mounted after a refused subPath: %v", mps)
	}

	// Pinned: the swap after the mount changes nothing; a second call
	// (the container restarted) reuses the mount.
	target, err := m.SubPathMount(uid, "vol", "app", 1, vol, "d")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(m.PodDir(uid), "volume-subpaths", "vol", "app", "1"); target != want {
		t.Errorf("target %s, want %s", target, want)
	}
	swap()
	if _, err := os.Stat(filepath.Join(target, "pinned")); err != nil {
		t.Errorf("the pinned subPath lost its content after the swap: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "secret")); err == nil {
		t.Error("the pinned subPath shows the host's secret after the swap")
	}
	if _, err := m.SubPathMount(uid, "vol", "app", 1, vol, "d"); err == nil {
		t.Error("SubPathMount of d, now a symlink out of the volume, succeeded; want refused")
	}
	unswap()
	if again, err := m.SubPathMount(uid, "vol", "app", 1, vol, "d"); err != nil || again != target {
		t.Errorf("second SubPathMount = %q, %v; want the same target", again, err)
	}
	if mps, _ := mountsUnder(m.mountInfo, target); len(mps) != 1 {
		t.Errorf("mounts at %s: %v, want one", target, mps)
	}
	file, err := m.SubPathMount(uid, "vol", "app", 2, vol, "d/pinned")
	if info, serr := os.Lstat(file); err != nil || serr != nil || !info.Mode().IsRegular() {
		t.Errorf("file subPath: %q, %v, %v; want a regular file bind-mounted", file, err, serr)
	}

	if err := m.TearDown(context.Background(), uid); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.PodDir(uid), "volume-subpaths")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("volume-subpaths after TearDown: %v, want removed", err)
	}
	for _, f := range []string{filepath.Join(vol, "d", "pinned"), filepath.Join(outside, "secret")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("TearDown deleted %s through the pin: %v", f, err)
		}
	}
}
