package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// EnsureShared makes the pods directory a shared mount, as the kubelet
// makes its root directory rshared at start: containerd accepts
// HostToContainer (rslave) and Bidirectional (rshared) mounts of volumes
// only from a shared mount. Nothing is done when the file system holding
// the pods directory is shared already (the usual systemd host); else the
// directory is bind-mounted onto itself and made rshared. Call it once at
// agent start, before any SetUp: a bind over existing pod mounts would
// hide them, so with pod mounts already under a private pods directory it
// refuses. Idempotent. Not safe to call concurrently with SetUp.
func (m *Manager) EnsureShared() error {
	dir := filepath.Clean(m.cfg.PodsDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	mps, err := readMountInfo(m.mountInfo)
	if err != nil {
		return fmt.Errorf("read %s: %w", m.mountInfo, err)
	}
	var holder *mountPoint
	for i := range mps {
		mp := &mps[i]
		if isUnder(dir, mp.Path) && (holder == nil || len(mp.Path) >= len(holder.Path)) {
			holder = mp
		}
	}
	if holder != nil && strings.Contains(holder.Optional, "shared:") {
		return nil
	}
	if holder != nil && holder.Path == dir {
		return mountErr("make-rshared", dir, unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""))
	}
	for _, mp := range mps {
		if isUnder(mp.Path, dir) && mp.Path != dir {
			return fmt.Errorf("pods directory %s holds mounts on a private mount (%s): not making it shared", dir, mp.Path)
		}
	}
	if err := mountErr("bind", dir, unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, "")); err != nil {
		return err
	}
	return mountErr("make-rshared", dir, unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""))
}

// isUnder reports whether path is dir or below it.
func isUnder(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func mountErr(op, dir string, err error) error {
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, dir, err)
	}
	return nil
}
