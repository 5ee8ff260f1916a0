package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
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
// kubelet's DirectoryOrCreate does. The mode is set through a descriptor
// opened without following a symlink: a pod that swaps the new directory
// for a symlink cannot have another file's mode changed.
func makeDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("hostPath type check failed: %s is not a directory: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	return unix.Fchmod(fd, 0o755)
}

// makeFile creates an empty file of mode 0644 and its parent directories.
// It never creates through a symlink (O_EXCL): a dangling symlink at path
// is an error, not a file created where it points; the mode is set on
// the descriptor, not by path.
func makeFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		// Created meanwhile, or a dangling symlink (which O_EXCL does
		// not follow): only a regular file will do.
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
			return nil
		}
		return fmt.Errorf("hostPath type check failed: %s is not a file", path)
	}
	if err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
