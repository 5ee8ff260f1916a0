package volumes

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// blockDevice returns a block device of this machine, or "".
func blockDevice() string {
	for _, p := range []string{"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0", "/dev/xvda"} {
		if info, err := os.Stat(p); err == nil && info.Mode()&fs.ModeDevice != 0 && info.Mode()&fs.ModeCharDevice == 0 {
			return p
		}
	}
	return ""
}

// TestCheckHostPath_G1: every hostPath type against every kind of path,
// with the kubelet's messages.
func TestCheckHostPath_G1(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	missing := filepath.Join(dir, "missing")
	block := blockDevice()
	tests := []struct {
		typ     v1.HostPathType
		path    string
		wantErr string // "" = ok
	}{
		{"", missing, ""},
		{v1.HostPathDirectory, dir, ""},
		{v1.HostPathDirectory, file, file + " is not a directory"},
		{v1.HostPathDirectory, missing, missing + " is not a directory"},
		{v1.HostPathDirectoryOrCreate, dir, ""},
		{v1.HostPathDirectoryOrCreate, file, file + " is not a directory"},
		{v1.HostPathFile, file, ""},
		{v1.HostPathFile, dir, dir + " is not a file"},
		{v1.HostPathFile, missing, missing + " is not a file"},
		{v1.HostPathFileOrCreate, file, ""},
		{v1.HostPathFileOrCreate, dir, dir + " is not a file"},
		{v1.HostPathSocket, sock, ""},
		{v1.HostPathSocket, file, file + " is not a socket file"},
		{v1.HostPathCharDev, "/dev/null", ""},
		{v1.HostPathCharDev, file, file + " is not a character device"},
		{v1.HostPathBlockDev, "/dev/null", "/dev/null is not a block device"},
		{v1.HostPathBlockDev, dir, dir + " is not a block device"},
		{"Folder", dir, "Folder is an invalid volume type"},
	}
	if block != "" {
		tests = append(tests, struct {
			typ     v1.HostPathType
			path    string
			wantErr string
		}{v1.HostPathBlockDev, block, ""}, struct {
			typ     v1.HostPathType
			path    string
			wantErr string
		}{v1.HostPathCharDev, block, block + " is not a character device"})
	}
	for _, tt := range tests {
		t.Run(string(tt.typ)+" "+filepath.Base(tt.path), func(t *testing.T) {
			typ := tt.typ
			err := checkHostPath(tt.path, &typ)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("checkHostPath = %v, want ok", err)
			case tt.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.wantErr)):
				t.Errorf("checkHostPath = %v, want %q", err, tt.wantErr)
			case tt.wantErr != "" && tt.typ != "Folder" && !strings.HasPrefix(err.Error(), "hostPath type check failed: "):
				t.Errorf("checkHostPath = %v, want the kubelet's prefix", err)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a check without create created %s", missing)
	}
}

// TestCheckHostPathCreates_G1: DirectoryOrCreate makes a 0755 directory,
// FileOrCreate a 0644 file and its parents, whatever the umask.
func TestCheckHostPathCreates_G1(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "a", "b")
	typ := v1.HostPathDirectoryOrCreate
	if err := checkHostPath(d, &typ); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(d); err != nil || !info.IsDir() || info.Mode().Perm() != 0o755 {
		t.Errorf("DirectoryOrCreate made %v, %v; want a 0755 directory", info.Mode(), err)
	}
	f := filepath.Join(dir, "x", "y", "f")
	typ = v1.HostPathFileOrCreate
	if err := checkHostPath(f, &typ); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(f); err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o644 {
		t.Errorf("FileOrCreate made %v, %v; want a 0644 file", info.Mode(), err)
	}
	// FileOrCreate keeps an existing file's content.
	if err := os.WriteFile(f, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkHostPath(f, &typ); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != "keep" {
		t.Errorf("FileOrCreate changed an existing file to %q", b)
	}
}
