package containerd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeExe writes an executable shell script dir/name printing out.
func writeExe(t *testing.T, dir, name, out string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nprintf '%s\\n' '"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindBundled: the first directory holding all three executables wins;
// a directory missing one, or holding one that is not executable, does not.
func TestFindBundled(t *testing.T) {
	full, partial, noexec := t.TempDir(), t.TempDir(), t.TempDir()
	for _, name := range BundledPrograms {
		writeExe(t, full, name, "x")
		writeExe(t, noexec, name, "x")
	}
	writeExe(t, partial, "containerd", "x")
	writeExe(t, partial, "containerd-shim-runc-v2", "x")
	if err := os.Chmod(filepath.Join(noexec, "runc"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dirs []string
		want string
	}{
		{[]string{partial, full}, full},
		{[]string{full, partial}, full},
		{[]string{noexec, partial}, ""},
		{[]string{"", "/nonexistent"}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := FindBundled(tt.dirs...); got != tt.want {
			t.Errorf("FindBundled(%q) = %q, want %q", tt.dirs, got, tt.want)
		}
	}
}

func TestBinaryVersion(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		out, want, wantErr string
	}{
		{out: "containerd github.com/containerd/containerd/v2 v2.4.2 ", want: "v2.4.2"},
		{out: "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3", want: "1.6.20~ds1"},
		{out: "runc version 1.5.3", wantErr: "unexpected output"},
		{out: "containerd x vnext", wantErr: "want <major>.<minor>"},
	}
	for i, tt := range tests {
		bin := writeExe(t, dir, "c"+string(rune('a'+i)), tt.out)
		got, err := BinaryVersion(context.Background(), bin)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.out, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.out, got, err, tt.want)
		}
	}
	if _, err := BinaryVersion(context.Background(), filepath.Join(dir, "missing")); err == nil {
		t.Error("missing binary: no error")
	}
}

func TestRuncVersion(t *testing.T) {
	dir := t.TempDir()
	if v, err := RuncVersion(context.Background(), writeExe(t, dir, "runc", "runc version 1.5.3")); err != nil || v != "1.5.3" {
		t.Errorf("RuncVersion = %q, %v; want 1.5.3", v, err)
	}
	if _, err := RuncVersion(context.Background(), writeExe(t, dir, "other", "containerd x v2.4.2")); err == nil {
		t.Error("not runc: no error")
	}
}

func TestParseVersion(t *testing.T) {
	for v, want := range map[string][2]int{"v2.4.2": {2, 4}, "2.0.0-rc.1": {2, 0}, "1.6.20~ds1": {1, 6}, "v10.1": {10, 1}, "3": {3, 0}, "v2.3": {2, 3}} {
		if major, minor, err := parseVersion(v); err != nil || major != want[0] || minor != want[1] {
			t.Errorf("parseVersion(%q) = %d, %d, %v; want %v", v, major, minor, err, want)
		}
	}
	for _, v := range []string{"", "v", "vx.1", "2x.1", "nightly"} {
		if _, _, err := parseVersion(v); err == nil {
			t.Errorf("parseVersion(%q): no error", v)
		}
	}
}

// TestChildEnv: the bundle directory goes first on containerd's PATH, so
// containerd starts the bundle's runc shim rather than one on PATH; TMPDIR
// is the managed runtime's own (not /tmp, which may be read-only); the
// rest of skiff's environment passes unchanged.
func TestChildEnv(t *testing.T) {
	tests := []struct {
		name   string
		binDir string
		env    []string
		want   []string
	}{
		{"no bundle: skiff's environment", "", []string{"PATH=/usr/bin", "A=1", "TMPDIR=/tmp"}, []string{"A=1", "PATH=/usr/bin", "TMPDIR=/t"}},
		{"no bundle, no PATH", "", []string{"A=1"}, []string{"A=1", "TMPDIR=/t"}},
		{"bundle first", "/opt/skiff", []string{"A=1", "PATH=/usr/bin:/bin", "B=2"}, []string{"A=1", "B=2", "PATH=/opt/skiff:/usr/bin:/bin", "TMPDIR=/t"}},
		{"no PATH: the default after it", "/b", []string{"A=1"}, []string{"A=1", "PATH=/b:" + defaultPath, "TMPDIR=/t"}},
		{"empty PATH", "/b", []string{"PATH="}, []string{"PATH=/b", "TMPDIR=/t"}},
	}
	for _, tt := range tests {
		if got := childEnv(tt.binDir, "/t", tt.env); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
