package volumes

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestHostPathTypesNeverCreateThroughSymlinks: the hostPath types that
// create (DirectoryOrCreate, FileOrCreate) on a path that a pod sharing
// the parent directory made a dangling symlink to elsewhere on the host
// fail, and create nothing where it points; the types that check follow
// the path as the kubelet's os.Stat does and refuse the wrong kind. No
// CVE: the class of kubernetes#61043 (allowedHostPaths does not restrict
// symlink traversal), see docs/security-tests.md.
func TestHostPathTypesNeverCreateThroughSymlinks(t *testing.T) {
	shared, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "shadow"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string) string {
		p := filepath.Join(shared, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dirLink := link("newdir", filepath.Join(outside, "made-dir"))
	fileLink := link("newfile", filepath.Join(outside, "made-file"))
	toFile := link("tofile", filepath.Join(outside, "shadow"))
	toDir := link("todir", outside)
	tests := []struct {
		path string
		typ  v1.HostPathType
	}{
		{dirLink, v1.HostPathDirectoryOrCreate},
		{fileLink, v1.HostPathFileOrCreate},
		{toFile, v1.HostPathDirectoryOrCreate},
		{toFile, v1.HostPathDirectory},
		{toDir, v1.HostPathFileOrCreate},
		{toDir, v1.HostPathFile},
		{toDir, v1.HostPathSocket},
		{toFile, v1.HostPathCharDev},
	}
	for _, tt := range tests {
		if err := checkHostPath(tt.path, &tt.typ); err == nil {
			t.Errorf("%s %s: accepted, want refused", tt.typ, filepath.Base(tt.path))
		}
	}
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 {
		t.Errorf("outside: %v, %v; want only shadow (nothing created through a symlink)", entries, err)
	}
	if info, err := os.Stat(filepath.Join(outside, "shadow")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("shadow: %v, %v; want its mode 0600 unchanged", info, err)
	}
}
