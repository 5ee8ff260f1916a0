package filesnap

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestPatternOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"pods/0b9c6f2e-8f4a-4c1e-9d2b-3a4b5c6d7e8f/etc-hosts", "pods/*/etc-hosts"},
		{"pods/0b9c6f2e/containers/app/3f2a9b1c", "pods/*/containers/app/*"},
		{"podlogs/default_s-w-17-bench_0123456789abcdef0123456789abcdef/app/0.log", "podlogs/default_s-w-N-bench_*/app/N.log"},
		{"state/k8s.io/a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90/status", "state/k8s.io/*/status"},
		{"probes.json", "probes.json"},
		{"deadbeefcafe/x", "deadbeefcafe/x"},
		{"a-12345678-b", "a-*-b"},
	} {
		if got := PatternOf(tc.in); got != tc.want {
			t.Errorf("PatternOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDiffAndGroups(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	before, after := t0.Add(-time.Minute), t0.Add(time.Second)
	old := Snapshot{
		"probes.json":             {Size: 700, ModTime: before, Ino: 1},
		"skiff.log":               {Size: 5000, ModTime: before, Ino: 2},
		"pods/aaaa1111/etc-hosts": {Size: 200, ModTime: before, Ino: 3},
		"pods/bbbb2222/etc-hosts": {Size: 200, ModTime: before, Ino: 4},
		"state.json":              {Size: 100, ModTime: before, Ino: 5},
		"touched-before.txt":      {Size: 10, ModTime: before, Ino: 6},
	}
	now := Snapshot{
		"probes.json":             {Size: 650, ModTime: after, Ino: 9},  // renamed over: a new inode
		"skiff.log":               {Size: 5400, ModTime: after, Ino: 2}, // appended
		"pods/bbbb2222/etc-hosts": {Size: 200, ModTime: before, Ino: 4},
		"pods/cccc3333/etc-hosts": {Size: 210, ModTime: after, Ino: 10},
		"pods/dddd4444/etc-hosts": {Size: 190, ModTime: after, Ino: 11},
		"state.json":              {Size: 80, ModTime: after, Ino: 5}, // rewritten in place, smaller
		"touched-before.txt":      {Size: 10, ModTime: before, Ino: 6},
	}
	changed, removed := Diff(old, now, t0)
	want := []Change{
		{Path: "pods/cccc3333/etc-hosts", Size: 210, Written: 210, New: true},
		{Path: "pods/dddd4444/etc-hosts", Size: 190, Written: 190, New: true},
		{Path: "probes.json", Size: 650, Written: 650},
		{Path: "skiff.log", Size: 5400, Written: 400},
		{Path: "state.json", Size: 80, InPlace: true},
	}
	if !slices.Equal(changed, want) || removed != 1 {
		t.Fatalf("Diff = %+v, %d removed; want %+v, 1", changed, removed, want)
	}
	groups := Groups(changed)
	wantGroups := []Group{
		{Pattern: "probes.json", Files: 1, Written: 650},
		{Pattern: "pods/*/etc-hosts", Files: 2, New: 2, Written: 400}, // as much, more files
		{Pattern: "skiff.log", Files: 1, Written: 400},
		{Pattern: "state.json", Files: 1, InPlace: 1, InPlaceBytes: 80},
	}
	if !slices.Equal(groups, wantGroups) {
		t.Fatalf("Groups = %+v, want %+v", groups, wantGroups)
	}
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/b/c.json", "a/d.log", "skip/x", "top"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("top", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	snap, err := Walk(root, filepath.Join(root, "skip"))
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(snap))
	if want := []string{"a/b/c.json", "a/d.log", "top"}; !slices.Equal(got, want) {
		t.Fatalf("Walk = %v, want %v", got, want)
	}
	if s := snap["top"]; s.Size != 5 || s.Ino == 0 || s.ModTime.IsZero() {
		t.Fatalf("top: %+v", s)
	}
	if _, err := Walk(filepath.Join(root, "missing")); err == nil {
		t.Fatal("Walk of a missing directory: no error")
	}
	all, err := WalkAll(filepath.Join(root, "a"), filepath.Join(root, "top"), filepath.Join(root, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(all)), []string{"a/b/c.json", "a/d.log", "top"}; !slices.Equal(got, want) {
		t.Fatalf("WalkAll = %v, want %v", got, want)
	}
}
