package volumes

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestMountsUnder: mountinfo lines are parsed (escapes, optional fields)
// and the mounts under a directory come deepest first.
func TestMountsUnder(t *testing.T) {
	info := filepath.Join(t.TempDir(), "mountinfo")
	lines := "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" +
		"90 26 0:50 / /var/lib/skiff/pods/u1/volumes/kubernetes.io~empty-dir/m rw shared:7 - tmpfs tmpfs rw,size=8192k\n" +
		"91 90 0:51 / /var/lib/skiff/pods/u1/volumes/kubernetes.io~empty-dir/m/in\\040side rw - tmpfs tmpfs rw\n" +
		"92 26 0:52 / /var/lib/skiff/pods/u10/volumes/kubernetes.io~secret/s rw - tmpfs tmpfs rw\n"
	if err := os.WriteFile(info, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mountsUnder(info, "/var/lib/skiff/pods/u1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/var/lib/skiff/pods/u1/volumes/kubernetes.io~empty-dir/m/in side",
		"/var/lib/skiff/pods/u1/volumes/kubernetes.io~empty-dir/m",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mountsUnder = %q, want %q (u10 is another pod)", got, want)
	}
	mps, _ := readMountInfo(info)
	if mps[1].Optional != "shared:7" || mps[1].FSType != "tmpfs" {
		t.Errorf("parsed %+v", mps[1])
	}
}
