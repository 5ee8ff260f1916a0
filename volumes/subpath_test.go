package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubPath_G1: a missing subPath is created with the volume's mode, an
// existing file is used, and nothing may leave the volume.
func TestSubPath_G1(t *testing.T) {
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	got, err := SubPath(vol, "a/b")
	if err != nil || got != filepath.Join(vol, "a/b") {
		t.Fatalf("SubPath(a/b) = %q, %v", got, err)
	}
	if info, err := os.Stat(got); err != nil || !info.IsDir() || info.Mode().Perm() != 0o777 {
		t.Errorf("created subPath = %v, %v; want a 0777 directory", info.Mode(), err)
	}
	// The volume root's setgid (fsGroup) and sticky (tmpfs) bits go to a
	// created subPath too, as the kubelet copies the whole mode.
	if err := os.Chmod(vol, 0o777|os.ModeSetgid|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	sticky, err := SubPath(vol, "c")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(sticky); err != nil || info.Mode()&(os.ModeSetgid|os.ModeSticky|os.ModePerm) != 0o777|os.ModeSetgid|os.ModeSticky {
		t.Errorf("subPath under a setgid, sticky root = %v, %v; want dgtrwxrwxrwx", info.Mode(), err)
	}
	// A configMap-style key link resolves to the current version's file.
	if err := os.MkdirAll(filepath.Join(vol, "..v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "..v1", "k"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..v1/k", filepath.Join(vol, "k")); err != nil {
		t.Fatal(err)
	}
	if got, err := SubPath(vol, "k"); err != nil || got != filepath.Join(vol, "..v1", "k") {
		t.Errorf("SubPath(k) = %q, %v; want the resolved file", got, err)
	}
	// Escapes.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(vol, "out")); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"../x", "a/../../x", "/etc", "out", "out/new"} {
		if got, err := SubPath(vol, sub); err == nil {
			t.Errorf("SubPath(%q) = %q, want an error", sub, got)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("SubPath created %v outside the volume", entries)
	}
}

// TestExpandSubPathExpr_G1: $(VAR) from the env, $$ escapes, unset or
// empty variables are errors naming all of them.
func TestExpandSubPathExpr_G1(t *testing.T) {
	env := map[string]string{"POD": "web-1", "NS": "prod", "EMPTY": ""}
	tests := []struct{ expr, want, err string }{
		{"$(POD)", "web-1", ""},
		{"logs/$(NS)/$(POD)", "logs/prod/web-1", ""},
		{"$$(POD)", "$(POD)", ""},
		{"a$b", "a$b", ""},
		{"$(POD", "$(POD", ""},
		{"$(NOPE)/$(EMPTY)/$(ALSO)", "", "missing value for ALSO, EMPTY, NOPE"},
	}
	for _, tt := range tests {
		got, err := ExpandSubPathExpr(tt.expr, env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error = %v, want %q", tt.expr, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}
