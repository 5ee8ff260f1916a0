// Package atomicfile writes files that readers never see half written.
package atomicfile

import "os"

// Write writes data to path through a temporary file beside it (path +
// ".tmp", given perm whatever the umask) and a rename. On error the
// temporary file is removed and path is unchanged. Not safe for concurrent
// writers of the same path.
func Write(path string, data []byte, perm os.FileMode) (retErr error) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
