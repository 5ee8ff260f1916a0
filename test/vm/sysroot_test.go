package vm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestEnsureSystemdRootCache(t *testing.T) {
	cache := t.TempDir()
	r := SystemdRoot{}.withDefaults()
	k := Kernel{Version: "6.1.0-9-cloud-amd64"}
	key, err := SystemdRootKey(r, k)
	if err != nil {
		t.Fatal(err)
	}
	// Leftovers: a killed build and the root of an older recipe.
	writeFiles(t, cache, map[string]string{
		".vm-systemd-build-123/root/etc/x":     "",
		"vm-systemd-0123456789abcdef/root.img": "old",
	})
	logf := func(string, ...any) {}
	builds := 0
	build := func(dir string) error {
		builds++
		return os.WriteFile(filepath.Join(dir, "root.img"), []byte("ext4"), 0o644)
	}

	image, built, err := ensureSystemdRoot(cache, r, k, logf, build)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "vm-systemd-"+key, "root.img"); image != want || !built || builds != 1 {
		t.Fatalf("first call: image %s built %v builds %d, want %s built once", image, built, builds, want)
	}
	if data, _ := os.ReadFile(image); string(data) != "ext4" {
		t.Errorf("image holds %q", data)
	}
	for _, gone := range []string{".vm-systemd-build-123", "vm-systemd-0123456789abcdef"} {
		if _, err := os.Stat(filepath.Join(cache, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it removed", gone, err)
		}
	}

	if again, built, err := ensureSystemdRoot(cache, r, k, logf, build); err != nil || again != image || built || builds != 1 {
		t.Errorf("second call: %s built %v err %v builds %d, want the cached image", again, built, err, builds)
	}

	// A failed build, or one without an image, leaves no cache entry.
	other := Kernel{Version: "6.1.0-10-cloud-amd64"}
	for name, b := range map[string]func(string) error{
		"fails":    func(string) error { return errors.New("debootstrap failed") },
		"no image": func(string) error { return nil },
	} {
		if _, _, err := ensureSystemdRoot(cache, r, other, logf, b); err == nil {
			t.Errorf("build that %s: no error", name)
		}
		entries, _ := filepath.Glob(filepath.Join(cache, "*vm-systemd-*"))
		if len(entries) != 1 || entries[0] != filepath.Dir(image) {
			t.Errorf("after a build that %s the cache holds %v, want only %s", name, entries, filepath.Dir(image))
		}
	}
}
