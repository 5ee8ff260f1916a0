package vm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/runtime/containerd"
)

// TestRuntimeProgramsAreSkiffs checks that the programs AddBundledRuntime
// carries are the ones skiff's managed mode looks for.
func TestRuntimeProgramsAreSkiffs(t *testing.T) {
	if !slices.Equal(runtimePrograms, containerd.BundledPrograms) {
		t.Errorf("runtimePrograms %q, skiff looks for %q", runtimePrograms, containerd.BundledPrograms)
	}
}

// TestAddBundledRuntime checks that skiff's runtime lands in the guest
// directory, from the host directory, modes kept, and that a directory
// lacking one program is an error naming it and make runtime.
func TestAddBundledRuntime(t *testing.T) {
	tests := []struct {
		name, missing string
	}{
		{name: "all"},
		{name: "no runc", missing: "runc"},
		{name: "no shim", missing: "containerd-shim-runc-v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range runtimePrograms {
				if name == tt.missing {
					continue
				}
				script := "#!/bin/sh\n# a stand-in for " + name + ", not an ELF executable\n"
				if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := NewRootfs()
			err := AddBundledRuntime(context.Background(), r, "/usr/lib/skiff", dir)
			if tt.missing != "" {
				if err == nil || !strings.Contains(err.Error(), tt.missing) || !strings.Contains(err.Error(), "make runtime") {
					t.Errorf("error %v, want one naming %s and make runtime", err, tt.missing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range r.ImageFiles() {
				if strings.HasPrefix(f.Path, "usr/lib/skiff/") {
					got[f.Path] = f.HostPath
					if f.Mode != 0o755 {
						t.Errorf("/%s mode %o, want 755", f.Path, f.Mode)
					}
				}
			}
			for _, name := range runtimePrograms {
				if p := "usr/lib/skiff/" + name; got[p] != filepath.Join(dir, name) {
					t.Errorf("/%s from %q, want %q", p, got[p], filepath.Join(dir, name))
				}
			}
			if len(got) != len(runtimePrograms) {
				t.Errorf("guest /usr/lib/skiff holds %d files, want %d: %v", len(got), len(runtimePrograms), got)
			}
		})
	}
}
