package volumes

import "golang.org/x/sys/unix"

// statfs returns the size in bytes of the file system at dir.
func statfs(dir string) (uint64, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0, err
	}
	return s.Blocks * uint64(s.Bsize), nil
}
