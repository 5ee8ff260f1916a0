package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootfsImageFiles checks the image layer entries of a tree: every kind
// but device nodes, modes kept, host files by path, generated ones by
// content (an empty one still a file), sorted parents first.
func TestRootfsImageFiles(t *testing.T) {
	host := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(host, []byte("P"), 0o751); err != nil {
		t.Fatal(err)
	}
	r := NewRootfs()
	for _, err := range []error{
		r.AddFile("/bin/prog", host),
		r.AddBytes("/etc/x", []byte("x"), 0o640),
		r.AddBytes("/etc/empty", nil, 0o644),
		r.AddSymlink("/usr/bin/sh", "/usr/bin/busybox"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range r.ImageFiles() {
		line := fmt.Sprintf("%s %o", f.Path, f.Mode)
		switch {
		case f.Linkname != "":
			line += " -> " + f.Linkname
		case f.HostPath != "":
			line += " host " + f.HostPath
		case f.Data != nil:
			line += fmt.Sprintf(" data %q", f.Data)
		default:
			line += " dir"
		}
		got = append(got, line)
	}
	want := []string{
		"bin 777 -> usr/bin", "dev 755 dir", "etc 755 dir", `etc/empty 644 data ""`, `etc/x 640 data "x"`,
		"lib 777 -> usr/lib", "lib64 777 -> usr/lib64", "mnt 755 dir", "proc 755 dir", "root 755 dir",
		"run 755 dir", "sbin 777 -> usr/sbin", "sys 755 dir", "tmp 1777 dir", "usr 755 dir", "usr/bin 755 dir",
		"usr/bin/prog 751 host " + host, "usr/bin/sh 777 -> /usr/bin/busybox", "usr/lib 755 dir",
		"usr/lib64 755 dir", "usr/sbin 755 dir", "var 755 dir", "var/lib 755 dir", "var/log 755 dir",
		"var/tmp 1777 dir",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("image files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
