package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyAgent checks that the agent's copy gets skiff's own runtime
// beside it, where skiff's managed mode looks, and that a bin/ without one
// of the runtime programs is an error naming make runtime.
func TestCopyAgent(t *testing.T) {
	tests := []struct {
		name, missing string
	}{
		{name: "all"},
		{name: "no runc", missing: "runc"},
		{name: "no containerd", missing: "containerd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			for _, name := range []string{"skiff", "containerd", "containerd-shim-runc-v2", "runc"} {
				if name != tt.missing {
					if err := os.WriteFile(filepath.Join(src, name), []byte(name), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			dir := filepath.Join(t.TempDir(), "bin")
			bin, err := copyAgent(filepath.Join(src, "skiff"), dir)
			if tt.missing != "" {
				if err == nil || !strings.Contains(err.Error(), tt.missing) || !strings.Contains(err.Error(), "make runtime") {
					t.Errorf("error %v, want one naming %s and make runtime", err, tt.missing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bin != filepath.Join(dir, "skiff") {
				t.Errorf("copy of skiff %s, want %s", bin, filepath.Join(dir, "skiff"))
			}
			for _, name := range []string{"skiff", "containerd", "containerd-shim-runc-v2", "runc"} {
				b, err := os.ReadFile(filepath.Join(dir, name))
				fi, serr := os.Stat(filepath.Join(dir, name))
				if err != nil || serr != nil || string(b) != name || fi.Mode().Perm() != 0o755 {
					t.Errorf("%s in %s: %q %v %v", name, dir, b, err, serr)
				}
			}
		})
	}
}
