package podlogs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is the error of a container log path that holds a
// symlink, a FIFO or anything but a regular file: skiff never reads,
// rotates or compresses through it. A container with write access to the
// log directory (a hostPath of /var/log) could plant a symlink there to
// read or rotate a host file through `kubectl logs` or the rotator.
var ErrNotRegular = errors.New("not a regular file")

// openLog opens the container log at path for reading without following
// a symlink at path (O_NOFOLLOW) or blocking on a FIFO (O_NONBLOCK, which
// regular files ignore), and checks that it is a regular file. Errors
// wrap the os error (fs.ErrNotExist) or ErrNotRegular.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("container log %s: %w", path, ErrNotRegular)
	}
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("container log %s: %w", path, ErrNotRegular)
	}
	return f, nil
}

// checkRegular is nil when path is a regular file (not followed through a
// symlink), the Lstat error, or ErrNotRegular.
func checkRegular(path string) (os.FileInfo, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("container log %s: %w", path, ErrNotRegular)
	}
	return info, nil
}
