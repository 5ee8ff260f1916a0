// Package atomicfile writes files that readers never see half written.
package atomicfile

import (
	"os"
	"path/filepath"
)

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

// WriteSync is Write made durable: the temporary file is flushed to disk
// before the rename and the directory after it, so that after a power
// loss path holds the old or the new data, never an empty file. For files
// a node needs after a reboot; it costs two fsyncs.
func WriteSync(path string, data []byte, perm os.FileMode) (retErr error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
