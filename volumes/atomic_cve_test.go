package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// outsideTree is a directory outside any volume with a file and a
// subdirectory, and what it holds, to check that nothing touched it.
func outsideTree(t *testing.T) (dir string, files []string) {
	t.Helper()
	dir = t.TempDir()
	for _, p := range []string{"etc/shadow", "victim", "..2026_01_01_00_00_00.1/k"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("host data"), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return dir, files
}

// TestAtomicWriterNeverFollowsSymlinks_CVE_2017_1002102: a container that
// could write into its configMap, secret, downwardAPI or projected volume
// (kubernetes#60814: the kubelet's atomic writer then deleted arbitrary
// host files while cleaning up) plants symlinks to the host where the
// writer looks: a stale timestamped directory, a stale user-visible
// name, ..data_tmp, ..data itself, a directory holding links. Updates and
// the removal of stale versions delete only the links, never what they
// point to; nothing outside the volume is written or removed.
func TestAtomicWriterNeverFollowsSymlinks_CVE_2017_1002102(t *testing.T) {
	outside, files := outsideTree(t)
	vol := t.TempDir()
	if _, err := writeAtomic(vol, map[string]file{"k": {Data: []byte("v1"), Mode: 0o644}}, t0, nil); err != nil {
		t.Fatal(err)
	}
	plant := map[string]string{
		"..2020_01_01_00_00_00.1": outside,                              // a stale version, as a link
		"stale":                   filepath.Join(outside, "victim"),     // a stale user-visible name
		"..data_tmp":              filepath.Join(outside, "etc"),        // the writer's temporary link
		"..dir/inner":             filepath.Join(outside, "etc/shadow"), // inside a stale real directory
		"..dir/up":                outside,
	}
	for link, target := range plant {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(vol, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	// ..data pointing out of the volume, by a relative path.
	rel, err := filepath.Rel(vol, filepath.Join(outside, "..2026_01_01_00_00_00.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Remove(filepath.Join(vol, "..data")), os.Symlink(rel, filepath.Join(vol, "..data"))); err != nil {
		t.Fatal(err)
	}
	for i, payload := range []map[string]file{
		{"k": {Data: []byte("v2"), Mode: 0o644}},
		{"other": {Data: []byte("v3"), Mode: 0o600}},
	} {
		if _, err := writeAtomic(vol, payload, t0.Add(time.Duration(i+1)*time.Second), nil); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	for _, f := range files {
		if data, err := os.ReadFile(filepath.Join(outside, f)); err != nil || string(data) != "host data" {
			t.Errorf("outside the volume, %s = %q, %v; want untouched", f, data, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 3 {
		t.Errorf("outside the volume: %d entries, want the 3 it had", len(entries))
	}
	if got, err := os.ReadFile(filepath.Join(vol, "other")); err != nil || string(got) != "v3" {
		t.Errorf("volume's other = %q, %v; want v3", got, err)
	}
	for _, gone := range []string{"stale", "k", "..dir"} {
		if _, err := os.Lstat(filepath.Join(vol, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left in the volume (%v), want removed", gone, err)
		}
	}
}

// TestAPIDataVolumesReadOnly_CVE_2017_1002102: the fix's other half, the
// kubelet's ReadOnlyAPIDataVolumes: configMap, secret, downwardAPI and
// projected volumes are read-only for containers whatever the mount says
// (the agent mounts Volume.ReadOnly ones read-only, TestAPIDataVolumeMountsReadOnly_CVE_2017_1002102
// in agent); an emptyDir is not. Secret and projected volumes, tmpfs
// mounts, are checked by the e2e TestCVE_AtomicWriterVolumesReadOnly_CVE_2017_1002102.
func TestAPIDataVolumesReadOnly_CVE_2017_1002102(t *testing.T) {
	m := newTestManager(t, storeWith(configMap("c", map[string]string{"k": "v"})))
	pod := volPod("ro", cmVolume("cfg", "c", false),
		v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
			Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	vols, err := m.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if !vols["cfg"].ReadOnly || !vols["info"].ReadOnly || vols["scratch"].ReadOnly {
		t.Errorf("ReadOnly: configMap %v, downwardAPI %v, emptyDir %v; want true, true, false",
			vols["cfg"].ReadOnly, vols["info"].ReadOnly, vols["scratch"].ReadOnly)
	}
}
