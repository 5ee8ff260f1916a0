package userns

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/runtime"
)

// first returns an Intn that always starts the search at block 0.
func first(int) int { return 0 }

func TestNewChecksConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{PodsDir: dir, MaxPods: 110}, ""},
		{"no dir", Config{MaxPods: 1}, "PodsDir"},
		{"block not a multiple of 65536", Config{PodsDir: dir, IDsPerPod: 1000}, "multiple of 65536"},
		{"first ID 0 maps the host's root", Config{PodsDir: dir, FirstID: 0, Length: 1 << 20}, "at least 65536"},
		{"range not in blocks", Config{PodsDir: dir, FirstID: 65536, Length: 100000}, "not in blocks"},
		{"range too small for max pods", Config{PodsDir: dir, FirstID: 65536, Length: 65536 * 4, MaxPods: 5}, "fewer than 5 pods"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestMappingAllocatesPersistsAndReleases: each pod gets its own block,
// the same one on every call and after a restart (the mapping file), and
// a released block is free again.
func TestMappingAllocatesPersistsAndReleases(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{PodsDir: dir, FirstID: 65536, Length: 65536 * 2, MaxPods: 2, Intn: first}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Mapping("a")
	if err != nil {
		t.Fatal(err)
	}
	if want := (runtime.IDMapping{HostID: 65536, Length: 65536}); a != want {
		t.Fatalf("pod a: %+v, want %+v", a, want)
	}
	if again, _ := m.Mapping("a"); again != a {
		t.Errorf("pod a again: %+v, want %+v", again, a)
	}
	b, err := m.Mapping("b")
	if err != nil || b.HostID != 65536*2 {
		t.Fatalf("pod b: %+v, %v; want host ID %d", b, err, 65536*2)
	}
	if _, err := m.Mapping("c"); err == nil || !strings.Contains(err.Error(), "could not find an empty slot") {
		t.Errorf("pod c in a full range: %v", err)
	}
	content, err := os.ReadFile(filepath.Join(dir, "b", "userns"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`; string(content) != want {
		t.Errorf("mapping file %s, want %s", content, want)
	}

	// A restarted node: the files decide, whatever the random start.
	cfg.Intn = func(n int) int { return n - 1 }
	m2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m2.Mapping("b"); got != b {
		t.Errorf("pod b after restart: %+v, want %+v", got, b)
	}
	if got := m2.Pods(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("pods after restart %v, want the files' [a b]", got)
	}
	if err := m2.Release("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "userns")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod a's mapping file after release: %v", err)
	}
	if c, err := m2.Mapping("c"); err != nil || c != a {
		t.Errorf("pod c after a's release: %+v, %v; want a's block %+v", c, err, a)
	}
	if err := m2.Release("never"); err != nil {
		t.Errorf("release of an unknown pod: %v", err)
	}
}

// TestNewRefusesBadFiles: a node must not hand out IDs another pod holds,
// so a mapping file it cannot trust stops it, naming the file.
func TestNewRefusesBadFiles(t *testing.T) {
	tests := map[string]string{
		"garbage":         `{`,
		"two mappings":    `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[]}`,
		"uid != gid":      `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
		"out of range":    `{"uidMappings":[{"hostId":0,"containerId":0,"length":65536}],"gidMappings":[{"hostId":0,"containerId":0,"length":65536}]}`,
		"wrong length":    `{"uidMappings":[{"hostId":65536,"containerId":0,"length":1000}],"gidMappings":[{"hostId":65536,"containerId":0,"length":1000}]}`,
		"container ID 10": `{"uidMappings":[{"hostId":65536,"containerId":10,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":10,"length":65536}]}`,
	}
	for name, content := range tests {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "p", "userns"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{PodsDir: dir}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "p", "userns")) {
			t.Errorf("%s: err %v, want one naming the file", name, err)
		}
	}
	// Two pods' files claiming one block.
	dir := t.TempDir()
	one := `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`
	for _, p := range []string{"p1", "p2"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p, "userns"), []byte(one), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(Config{PodsDir: dir}); err == nil || !strings.Contains(err.Error(), "pod p1's already") {
		t.Errorf("two pods, one block: %v", err)
	}
}
