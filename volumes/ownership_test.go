package volumes

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestOwnershipMode_G15(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     fs.FileMode
		readOnly bool
		want     fs.FileMode
	}{
		{"file rw", 0o644, false, 0o664},
		{"private file rw", 0o600, false, 0o660},
		{"executable file keeps x, gets no group x", 0o755, false, 0o775},
		{"file ro", 0o600, true, 0o640},
		{"file ro already readable", 0o644, true, 0o644},
		{"dir rw", fs.ModeDir | 0o755, false, fs.ModeDir | fs.ModeSetgid | 0o775},
		{"dir ro", fs.ModeDir | 0o700, true, fs.ModeDir | fs.ModeSetgid | 0o750},
		{"world dir rw", fs.ModeDir | 0o777, false, fs.ModeDir | fs.ModeSetgid | 0o777},
		{"setuid file keeps it", fs.ModeSetuid | 0o700, false, fs.ModeSetuid | 0o760},
	} {
		if got := ownershipMode(tc.mode, tc.readOnly); got != tc.want {
			t.Errorf("%s: ownershipMode(%v, %v) = %v, want %v", tc.name, tc.mode, tc.readOnly, got, tc.want)
		}
	}
}

func TestRootIsOwned_G15(t *testing.T) {
	dir := fs.ModeDir | fs.ModeSetgid
	for _, tc := range []struct {
		name     string
		gid      uint32
		mode     fs.FileMode
		readOnly bool
		want     bool
	}{
		{"owned rw", 2000, dir | 0o770, false, true},
		{"owned rw superset", 2000, dir | 0o777, false, true},
		{"owned ro", 2000, dir | 0o750, true, true},
		{"other group", 0, dir | 0o777, false, false},
		{"no setgid", 2000, fs.ModeDir | 0o777, false, false},
		{"group not writable rw", 2000, dir | 0o750, false, false},
		{"group not executable", 2000, dir | 0o760, false, false},
		{"not a directory", 2000, fs.ModeSetgid | 0o770, false, false},
	} {
		if got := rootIsOwned(tc.gid, tc.mode, 2000, tc.readOnly); got != tc.want {
			t.Errorf("%s: rootIsOwned(%d, %v) = %v, want %v", tc.name, tc.gid, tc.mode, got, tc.want)
		}
	}
}

// statOf returns path's gid and mode (not following symlinks).
func statOf(t *testing.T, path string) (uint32, fs.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Gid, info.Mode()
}

func mustWrite(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// ownedTree makes root/{a (0600), sub/ (0700), sub/b (0755), link ->
// outside} and outside (0600, not in the tree).
func ownedTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "vol"), filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "a"), 0o600)
	mustWrite(t, filepath.Join(root, "sub", "b"), 0o755)
	mustWrite(t, outside, 0o600)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// TestSetOwnershipWalk_G15 changes gids, so it needs root.
func TestSetOwnershipWalk_G15(t *testing.T) {
	needRoot(t)
	m := newTestManager(t, nil)
	always, onMismatch := v1.FSGroupChangeAlways, v1.FSGroupChangeOnRootMismatch
	sg := fs.ModeDir | fs.ModeSetgid
	for _, tc := range []struct {
		name     string
		readOnly bool
		policy   *v1.PodFSGroupChangePolicy
		want     map[string]fs.FileMode // path under root -> mode; all get gid 2000
	}{
		{"rw default policy", false, nil, map[string]fs.FileMode{
			".": sg | 0o775, "a": 0o660, "sub": sg | 0o770, "sub/b": 0o775}},
		{"rw Always", false, &always, map[string]fs.FileMode{
			".": sg | 0o775, "a": 0o660, "sub": sg | 0o770, "sub/b": 0o775}},
		{"ro", true, nil, map[string]fs.FileMode{
			".": sg | 0o755, "a": 0o640, "sub": sg | 0o750, "sub/b": 0o755}},
		{"OnRootMismatch on a mismatched root walks", false, &onMismatch, map[string]fs.FileMode{
			".": sg | 0o775, "a": 0o660, "sub": sg | 0o770, "sub/b": 0o775}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := ownedTree(t)
			if err := m.setOwnership(root, ptr(int64(2000)), tc.policy, tc.readOnly); err != nil {
				t.Fatal(err)
			}
			for p, want := range tc.want {
				gid, mode := statOf(t, filepath.Join(root, p))
				if gid != 2000 || mode != want {
					t.Errorf("%s: gid %d mode %v, want gid 2000 mode %v", p, gid, mode, want)
				}
			}
			if gid, _ := statOf(t, filepath.Join(root, "link")); gid != 2000 {
				t.Errorf("link: gid %d, want 2000 (lchown)", gid)
			}
			if gid, mode := statOf(t, outside); gid != 0 || mode != 0o600 {
				t.Errorf("symlink target changed: gid %d mode %v, want 0 and 0600", gid, mode)
			}
		})
	}
	t.Run("nil fsGroup changes nothing", func(t *testing.T) {
		root, _ := ownedTree(t)
		if err := m.setOwnership(root, nil, nil, false); err != nil {
			t.Fatal(err)
		}
		if gid, mode := statOf(t, filepath.Join(root, "a")); gid != 0 || mode != 0o600 {
			t.Errorf("a: gid %d mode %v, want unchanged", gid, mode)
		}
	})
}

// TestSetOwnershipOnRootMismatchSkips_G15: an owned root skips the walk
// under OnRootMismatch (a file below stays as it is) but not under Always.
func TestSetOwnershipOnRootMismatchSkips_G15(t *testing.T) {
	needRoot(t)
	m := newTestManager(t, nil)
	for _, tc := range []struct {
		policy   v1.PodFSGroupChangePolicy
		wantWalk bool
	}{
		{v1.FSGroupChangeOnRootMismatch, false},
		{v1.FSGroupChangeAlways, true},
	} {
		root, _ := ownedTree(t)
		if err := os.Chown(root, -1, 2000); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, fs.ModeSetgid|0o770); err != nil {
			t.Fatal(err)
		}
		if err := m.setOwnership(root, ptr(int64(2000)), &tc.policy, false); err != nil {
			t.Fatal(err)
		}
		gid, mode := statOf(t, filepath.Join(root, "a"))
		if walked := gid == 2000 && mode == 0o660; walked != tc.wantWalk {
			t.Errorf("%s: a has gid %d mode %v; walked %v, want %v", tc.policy, gid, mode, walked, tc.wantWalk)
		}
	}
}

// TestVolumeOwnershipSetUpAndRefresh_G15: an emptyDir and a configMap
// volume of a pod with fsGroup are owned after SetUp; a configMap update
// keeps the new files owned; a new Manager (an agent restart) walks
// nothing again and keeps the emptyDir's setgid bit.
func TestVolumeOwnershipSetUpAndRefresh_G15(t *testing.T) {
	needRoot(t)
	store := storeWith(configMap("cfg", map[string]string{"k": "v1"}))
	m := newTestManager(t, store)
	pod := volPod("own-1", v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		cmVolume("cfg", "cfg", false),
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}})
	pod.Spec.Volumes[1].ConfigMap.DefaultMode = ptr(int32(0o600))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(2000))}
	ctx := context.Background()
	vols, err := m.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	scratch, cfg := vols["scratch"].HostPath, vols["cfg"].HostPath
	sg := fs.ModeDir | fs.ModeSetgid
	check := func(what, path string, want fs.FileMode) {
		t.Helper()
		info, err := os.Stat(path) // through the ..data links
		if err != nil {
			t.Fatal(err)
		}
		if gid := info.Sys().(*syscall.Stat_t).Gid; gid != 2000 || info.Mode() != want {
			t.Errorf("%s: gid %d mode %v, want gid 2000 mode %v", what, gid, info.Mode(), want)
		}
	}
	check("emptyDir root", scratch, sg|0o777)
	check("Memory emptyDir root", vols["mem"].HostPath, sg|fs.ModeSticky|0o777) // the tmpfs's 1777, as the kubelet's
	check("configMap root", cfg, sg|0o777)
	check("configMap file", filepath.Join(cfg, "k"), 0o640)
	check("configMap data dir", filepath.Join(cfg, dataDirName), sg|0o755)

	store.Replace([]*v1.ConfigMap{configMap("cfg", map[string]string{"k": "v2", "new": "n"})}, nil)
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readLinked(t, cfg, "new"); got != "n" {
		t.Fatalf("refresh did not write: new = %q", got)
	}
	check("configMap file after update", filepath.Join(cfg, "k"), 0o640)
	check("new configMap file after update", filepath.Join(cfg, "new"), 0o640)
	check("new data dir after update", filepath.Join(cfg, dataDirName), sg|0o755)

	// What the app wrote is not walked again by a restarted agent.
	mustWrite(t, filepath.Join(scratch, "private"), 0o600)
	mustWrite(t, filepath.Join(vols["mem"].HostPath, "private"), 0o600)
	m2, err := New(Config{PodsDir: m.cfg.PodsDir, Objects: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	check("emptyDir root after restart", scratch, sg|0o777)
	check("Memory emptyDir root after restart", vols["mem"].HostPath, sg|fs.ModeSticky|0o777)
	// (its gid is 2000 from the setgid directory; the walk would add g+rw)
	for _, dir := range []string{scratch, vols["mem"].HostPath} {
		if _, mode := statOf(t, filepath.Join(dir, "private")); mode != 0o600 {
			t.Errorf("%s: app's file walked after restart: mode %v, want 0600", dir, mode)
		}
	}
}
