package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 6, 30, 0, 0, time.UTC)

func readLinked(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// TestWriteAtomicLayout_G13: the kubelet's layout, an update that swaps
// ..data, a no-op for the same content, and removed keys' links gone.
func TestWriteAtomicLayout_G13(t *testing.T) {
	dir := t.TempDir()
	changed, err := writeAtomic(dir, map[string]file{
		"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o400},
	}, t0, nil)
	if err != nil || !changed {
		t.Fatalf("first write = %v, %v; want changed", changed, err)
	}
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(first, "..2026_11_24_06_30_00.") {
		t.Fatalf("..data -> %q, %v; want a timestamped directory", first, err)
	}
	for name, target := range map[string]string{"a": "..data/a", "sub": "..data/sub"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != target {
			t.Errorf("%s -> %q, %v; want %q", name, got, err, target)
		}
	}
	if got := readLinked(t, dir, "sub/b"); got != "2" {
		t.Errorf("sub/b = %q", got)
	}
	if info, err := os.Stat(filepath.Join(dir, "sub/b")); err != nil || info.Mode().Perm() != 0o400 {
		t.Errorf("sub/b mode = %v, %v; want 0400", info.Mode(), err)
	}

	// Same content: nothing is written, ..data stays.
	changed, err = writeAtomic(dir, map[string]file{
		"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o400},
	}, t0.Add(time.Second), nil)
	if err != nil || changed {
		t.Fatalf("same content = %v, %v; want unchanged", changed, err)
	}
	if got, _ := os.Readlink(filepath.Join(dir, "..data")); got != first {
		t.Errorf("..data -> %q after a no-op, want %q", got, first)
	}
	// A mode change alone is a change.
	if changed, err = writeAtomic(dir, map[string]file{
		"a": {Data: []byte("1"), Mode: 0o600}, "sub/b": {Data: []byte("2"), Mode: 0o400},
	}, t0.Add(2*time.Second), nil); err != nil || !changed {
		t.Fatalf("mode change = %v, %v; want changed", changed, err)
	}

	// An update: new content, "sub" dropped, "c" added; ..data swapped and
	// the old version removed.
	changed, err = writeAtomic(dir, map[string]file{"a": {Data: []byte("3"), Mode: 0o644}, "c": {Data: []byte("4"), Mode: 0o644}}, t0.Add(3*time.Second), nil)
	if err != nil || !changed {
		t.Fatalf("update = %v, %v; want changed", changed, err)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	if second == first || !strings.HasPrefix(second, "..2026_11_24_06_30_03.") {
		t.Errorf("..data -> %q after the update, want a new version", second)
	}
	if got := readLinked(t, dir, "a") + readLinked(t, dir, "c"); got != "34" {
		t.Errorf("a+c = %q, want 34", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale link sub: %v, want it removed", err)
	}
	entries, _ := os.ReadDir(dir)
	var versions []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) != 1 || versions[0] != second {
		t.Errorf("version directories = %v, want only %s", versions, second)
	}
}

// TestWriteAtomicRejectsBadPaths: payload paths cannot leave the volume
// or clash with the writer's names.
func TestWriteAtomicRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"/abs", "../x", "a/../../x", "..data", ""} {
		if _, err := writeAtomic(t.TempDir(), map[string]file{p: {Data: []byte("x"), Mode: 0o644}}, t0, nil); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

// TestWriteAtomicReaderSeesWholeVersions_G13: a reader that resolves
// ..data once never sees files of two versions, while a writer swaps
// versions continuously.
func TestWriteAtomicReaderSeesWholeVersions_G13(t *testing.T) {
	dir := t.TempDir()
	payload := func(v string) map[string]file {
		return map[string]file{"a": {Data: []byte(v), Mode: 0o644}, "b": {Data: []byte(v), Mode: 0o644}, "c/d": {Data: []byte(v), Mode: 0o644}}
	}
	if _, err := writeAtomic(dir, payload("0"), t0, nil); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, torn atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				target, err := os.Readlink(filepath.Join(dir, "..data"))
				if err != nil {
					continue
				}
				var got []string
				for _, name := range []string{"a", "b", "c/d"} {
					b, err := os.ReadFile(filepath.Join(dir, target, name))
					if err != nil {
						got = nil // the version was removed meanwhile: fine
						break
					}
					got = append(got, string(b))
				}
				if got == nil {
					continue
				}
				reads.Add(1)
				if got[0] != got[1] || got[1] != got[2] {
					torn.Add(1)
				}
			}
		}()
	}
	for i := 1; i <= 300; i++ {
		if _, err := writeAtomic(dir, payload(strings.Repeat("x", i)), t0.Add(time.Duration(i)*time.Millisecond), nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() > 0 {
		t.Fatalf("%d of %d reads saw files of two versions", torn.Load(), reads.Load())
	}
	if reads.Load() == 0 {
		t.Fatal("no complete read")
	}
}
