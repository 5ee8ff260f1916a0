package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWrite: Write and WriteSync replace a file's content whole, with the
// mode given whatever the umask, leave no temporary file, and fail into a
// missing directory.
func TestWrite(t *testing.T) {
	for name, write := range map[string]func(string, []byte, os.FileMode) error{"Write": Write, "WriteSync": WriteSync} {
		t.Run(name, func(t *testing.T) { testWrite(t, write) })
	}
}

func testWrite(t *testing.T, Write func(string, []byte, os.FileMode) error) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second"} {
		if err := Write(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 despite the umask", st.Mode().Perm())
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
