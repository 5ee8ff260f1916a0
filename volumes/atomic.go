package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The kubelet's AtomicWriter layout of a configMap, secret, downwardAPI or
// projected volume:
//
//	<dir>/..2026_11_24_06_30_00.123456789/   the files of one version
//	<dir>/..data -> ..2026_11_24_06_30_00.123456789
//	<dir>/<key> -> ..data/<key>               one per top-level path
//
// An update writes a new timestamped directory and swaps ..data to it with
// one rename, so a reader that resolves ..data once sees one whole version.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// file is one file of a volume's payload.
type file struct {
	Data []byte
	Mode int32
	// Owner is the file's owner (uid); nil: the agent's (root).
	Owner *int64
}

// writeAtomic makes dir hold exactly payload (paths relative to dir) and
// reports whether it changed anything. It writes nothing when the current
// version already has the same files, contents and modes. Not safe for
// concurrent calls on the same dir (the Manager serialises them per pod).
// setPerms (nil: none) runs after a new version's files are written and
// before ..data points to them, as the kubelet's AtomicWriter does; its
// error abandons the new version.
func writeAtomic(dir string, payload map[string]file, now time.Time, setPerms func() error) (changed bool, err error) {
	for p := range payload {
		if err := validatePayloadPath(p); err != nil {
			return false, err
		}
	}
	old, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataDirName, err)
	}
	if old != "" {
		same, err := sameContent(filepath.Join(dir, old), payload)
		if err != nil {
			return false, err
		}
		if same {
			return false, linkTopLevel(dir, payload)
		}
	}
	tsDir, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("create data directory: %w", err)
	}
	if err := writeFiles(tsDir, payload); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			_ = os.RemoveAll(tsDir)
			return false, fmt.Errorf("set volume ownership: %w", err)
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("link new data directory: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("swap %s: %w", dataDirName, err)
	}
	if err := linkTopLevel(dir, payload); err != nil {
		return true, err
	}
	if err := removeStale(dir, payload, filepath.Base(tsDir)); err != nil {
		return true, err
	}
	return true, nil
}

// validatePayloadPath refuses paths that could leave the volume or clash
// with the writer's own names, as the kubelet's validatePath does.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case len(p) > 4096:
		return fmt.Errorf("invalid path: must be less than or equal to 4096 characters")
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	for _, item := range strings.Split(p, "/") {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > 255 {
			return fmt.Errorf("invalid path: path component must be less than or equal to 255 characters: %s", p)
		}
	}
	return nil
}

// sameContent reports whether the version in tsDir has exactly payload.
func sameContent(tsDir string, payload map[string]file) (bool, error) {
	n := 0
	err := filepath.WalkDir(tsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		n++
		rel, _ := filepath.Rel(tsDir, path)
		want, ok := payload[rel]
		if !ok {
			return errStop
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != fs.FileMode(want.Mode).Perm() || !sameOwner(info, want.Owner) {
			return errStop
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want.Data) {
			return errStop
		}
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil // a dangling ..data: write a new version
	case err != nil:
		return false, fmt.Errorf("compare volume content: %w", err)
	}
	return n == len(payload), nil
}

var errStop = errors.New("stop walking")

func writeFiles(tsDir string, payload map[string]file) error {
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return fmt.Errorf("chmod data directory: %w", err)
	}
	for p, f := range payload {
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create directory for %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.Data, fs.FileMode(f.Mode).Perm()); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		// WriteFile's mode is filtered by the umask.
		if err := os.Chmod(full, fs.FileMode(f.Mode).Perm()); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
		if f.Owner != nil {
			if err := os.Lchown(full, int(*f.Owner), -1); err != nil {
				return fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	return nil
}

// sameOwner reports whether info's file is owned by owner (nil: the
// agent's user, who writes the files).
func sameOwner(info fs.FileInfo, owner *int64) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	want := int64(os.Geteuid())
	if owner != nil {
		want = *owner
	}
	return int64(st.Uid) == want
}

// topLevel returns the first path component of each payload path.
func topLevel(payload map[string]file) map[string]bool {
	out := map[string]bool{}
	for p := range payload {
		first, _, _ := strings.Cut(filepath.Clean(p), "/")
		out[first] = true
	}
	return out
}

// linkTopLevel creates the user-visible symlinks <name> -> ..data/<name>.
func linkTopLevel(dir string, payload map[string]file) error {
	for name := range topLevel(payload) {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
	}
	return nil
}

// removeStale removes user-visible links no longer in payload and every
// timestamped directory but keep.
func removeStale(dir string, payload map[string]file, keep string) error {
	want := topLevel(payload)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list volume: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataDirName || name == keep:
		case strings.HasPrefix(name, ".."):
			if e.IsDir() {
				errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
			}
		case !want[name] && e.Type()&fs.ModeSymlink != 0:
			errs = append(errs, os.Remove(filepath.Join(dir, name)))
		}
	}
	return errors.Join(errs...)
}
