package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// checkHostPath runs the kubelet's hostPath type check (checkTypeInternal
// in pkg/volume/hostpath): it creates what DirectoryOrCreate (mode 0755)
// and FileOrCreate (0644, parent directories 0755) ask for and fails with
// the kubelet's messages when the path is of another type. An unset or
// empty type checks nothing. Symlinks are followed, as the kubelet's
// os.Stat does.
func checkHostPath(path string, typ *v1.HostPathType) error {
	if typ == nil || *typ == v1.HostPathUnset {
		return nil
	}
	info, statErr := os.Stat(path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("hostPath type check failed: %w", statErr)
	}
	mode := fs.FileMode(0)
	if exists {
		mode = info.Mode()
	}
	switch *typ {
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			return makeDir(path)
		}
		fallthrough
	case v1.HostPathDirectory:
		if !exists || !mode.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			return makeFile(path)
		}
		fallthrough
	case v1.HostPathFile:
		if !exists || !mode.IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case v1.HostPathSocket:
		if !exists || mode&fs.ModeSocket == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", path)
		}
	case v1.HostPathCharDev:
		if !exists || mode&fs.ModeCharDevice == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", path)
		}
	case v1.HostPathBlockDev:
		if !exists || mode&fs.ModeDevice == 0 || mode&fs.ModeCharDevice != 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", path)
		}
	default:
		return fmt.Errorf("%s is an invalid volume type", *typ)
	}
	return nil
}

// makeDir creates path with mode 0755 (not filtered by the umask), as the
// kubelet's DirectoryOrCreate does.
func makeDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	return os.Chmod(path, 0o755)
}

// makeFile creates an empty file of mode 0644 and its parent directories.
func makeFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
