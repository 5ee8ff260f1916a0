package vm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanGuestPath(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "/etc/hosts", want: "etc/hosts"},
		{in: "/etc//x/../hosts", want: "etc/hosts"},
		{in: "/bin/sh", want: "usr/bin/sh"},
		{in: "/lib/x86_64-linux-gnu/libc.so.6", want: "usr/lib/x86_64-linux-gnu/libc.so.6"},
		{in: "/lib64/ld-linux-x86-64.so.2", want: "usr/lib64/ld-linux-x86-64.so.2"},
		{in: "/usr/bin/sh", want: "usr/bin/sh"},
		{in: "/binaries/x", want: "binaries/x"},
		{in: "etc/hosts", err: "not absolute"},
		{in: "/", err: "is the root"},
		{in: "/bin", err: "replaces the /bin symlink"},
	}
	for _, tt := range tests {
		got, err := clean(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("clean(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// listing renders the archive of r as "mode name[ -> target|=data]" lines.
func listing(t *testing.T, r *Rootfs) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteCPIO(&buf); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range readCPIO(t, buf.Bytes()) {
		line := "/" + e.name
		switch e.mode &^ modePerm {
		case modeDir:
			line = "d " + line
		case modeSymlink:
			line = "l " + line + " -> " + e.data
		case modeCharDev:
			line = "c " + line
		default:
			line = "f " + line + " = " + e.data
		}
		out = append(out, line)
	}
	return out
}

func TestRootfsArchive(t *testing.T) {
	host := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(host, "tree", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(host, "tree", "sub", "a"), []byte("A"), 0o600))
	must(os.Symlink("sub/a", filepath.Join(host, "tree", "link")))
	must(os.WriteFile(filepath.Join(host, "prog"), []byte("P"), 0o755))

	r := NewRootfs()
	must(r.Add("/opt/tree", filepath.Join(host, "tree")))
	must(r.AddFile("/bin/prog", filepath.Join(host, "prog")))
	must(r.AddBytes("/etc/x", []byte("old"), 0o644))
	must(r.AddBytes("/etc/x", []byte("new"), 0o644)) // the last one wins
	must(r.AddSymlink("/usr/bin/sh", "/usr/bin/busybox"))

	got := listing(t, r)
	// Parents come before children, merged-/usr paths land under usr/.
	want := []string{
		"l /bin -> usr/bin", "d /dev", "c /dev/console", "c /dev/null", "d /etc", "f /etc/x = new",
		"l /lib -> usr/lib", "l /lib64 -> usr/lib64", "d /mnt", "d /opt", "d /opt/tree",
		"l /opt/tree/link -> sub/a", "d /opt/tree/sub", "f /opt/tree/sub/a = A", "d /proc", "d /root",
		"d /run", "l /sbin -> usr/sbin", "d /sys", "d /tmp", "d /usr", "d /usr/bin", "f /usr/bin/prog = P",
		"l /usr/bin/sh -> /usr/bin/busybox", "d /usr/lib", "d /usr/lib64", "d /usr/sbin", "d /var",
		"d /var/lib", "d /var/log", "d /var/tmp",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("archive:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Equal inputs give identical bytes.
	var a, b bytes.Buffer
	must(r.WriteCPIO(&a))
	must(r.WriteCPIO(&b))
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two writes of the same rootfs differ")
	}
}

func TestRootfsPermissions(t *testing.T) {
	r := NewRootfs()
	host := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(host, []byte("x"), 0o751); err != nil {
		t.Fatal(err)
	}
	if err := r.AddFile("/f", host); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteCPIO(&buf); err != nil {
		t.Fatal(err)
	}
	perms := map[string]uint32{}
	for _, e := range readCPIO(t, buf.Bytes()) {
		perms[e.name] = e.mode & modePerm
	}
	for name, want := range map[string]uint32{"f": 0o751, "tmp": 0o1777, "var/tmp": 0o1777, "dev/console": 0o600, "etc": 0o755} {
		if perms[name] != want {
			t.Errorf("%s: mode %o, want %o", name, perms[name], want)
		}
	}
}

func TestRootfsErrors(t *testing.T) {
	dir := t.TempDir()
	r := NewRootfs()
	if err := r.AddBytes("/etc/file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"parent is a file", r.AddBytes("/etc/file/child", nil, 0o644), "is not a directory"},
		{"relative", r.AddBytes("etc/x", nil, 0o644), "not absolute"},
		{"missing host file", r.AddFile("/x", filepath.Join(dir, "nope")), "no such file"},
		{"host directory as file", r.AddFile("/x", dir), "not a regular file"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want %q", tt.name, tt.err, tt.want)
		}
	}
	if !r.Has("/etc/file") || r.Has("/etc/file/child") || r.Has("relative") {
		t.Error("Has does not reflect the entries")
	}
}

func TestWriteHostFileDetectsChange(t *testing.T) {
	host := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(host, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	cw := newCPIOWriter(&buf)
	// A header claiming a size is replaced by the file's real size.
	if err := writeHostFile(cw, cpioHeader{Name: "f", Mode: modeRegular | 0o644, Size: 99}, host); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if e := readCPIO(t, buf.Bytes()); len(e) != 1 || e[0].data != "abc" {
		t.Fatalf("entries = %+v, want f = abc", e)
	}
}
