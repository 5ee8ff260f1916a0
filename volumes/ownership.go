package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Volume ownership by the pod's fsGroup, as the kubelet's
// SetVolumeOwnership (pkg/volume/volume_linux.go) does it: every file and
// directory of the volume gets group fsGroup (its owner is kept) and the
// group bits of rwMask (roMask for read-only volume types); directories
// also get the group's execute bit and setgid, so that what containers
// create there inherits the group.
const (
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
)

// ownershipMode is the mode the kubelet's changeFilePermission gives a
// file or directory of mode m (m|mask; symlinks are never chmodded, see
// setOwnership). Pure.
func ownershipMode(m fs.FileMode, readOnly bool) fs.FileMode {
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if m.IsDir() {
		mask |= fs.ModeSetgid | execMask
	}
	return m | mask
}

// rootIsOwned is the kubelet's !requiresPermissionChange: the volume root
// (gid, mode) already has group fsGroup, setgid and at least the group
// permissions the walk would give it. A root that is not a directory is
// never owned. Pure.
func rootIsOwned(gid uint32, mode fs.FileMode, fsGroup int64, readOnly bool) bool {
	if int64(gid) != fsGroup || !mode.IsDir() {
		return false
	}
	want := rwMask
	if readOnly {
		want = roMask
	}
	want |= execMask
	return mode.Perm()&want == want && mode&fs.ModeSetgid != 0
}

// skipOwnership is the kubelet's skipPermissionChange: only the
// OnRootMismatch policy may skip, and only when the root is owned already
// (a root that cannot be read is walked).
func skipOwnership(root string, fsGroup int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) bool {
	if policy == nil || *policy != v1.FSGroupChangeOnRootMismatch {
		return false
	}
	info, err := os.Stat(root)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return false
	}
	return rootIsOwned(st.Gid, info.Mode(), fsGroup, readOnly)
}

// setOwnership gives the volume at root to fsGroup (nothing when fsGroup
// is nil), unless policy is OnRootMismatch and the root is owned already.
// It walks children before their directory, so the root is changed last:
// an interrupted walk leaves the root unowned and OnRootMismatch walks
// again. Symlinks get their group changed (lchown) but are never followed
// nor chmodded. A failed chown or chmod is logged and the walk goes on, as
// in the kubelet; a directory that cannot be read ends it with an error.
// Blocking; not safe for concurrent calls on the same root.
func (m *Manager) setOwnership(root string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil || skipOwnership(root, *fsGroup, policy, readOnly) {
		return nil
	}
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	return m.ownTree(root, info, int(*fsGroup), readOnly)
}

// ownTree changes path's children (if it is a directory), then path.
// Children are not sorted: the order does not matter and sorting costs.
func (m *Manager) ownTree(path string, info fs.FileInfo, gid int, readOnly bool) error {
	if info.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		_ = f.Close()
		if err != nil {
			return err
		}
		for _, name := range names {
			child := filepath.Join(path, name)
			ci, err := os.Lstat(child)
			if err != nil {
				return err
			}
			if err := m.ownTree(child, ci, gid, readOnly); err != nil {
				return err
			}
		}
	}
	m.ownFile(path, info, gid, readOnly)
	return nil
}

// ownFile is the kubelet's changeFilePermission for one path.
func (m *Manager) ownFile(path string, info fs.FileInfo, gid int, readOnly bool) {
	if err := os.Lchown(path, -1, gid); err != nil {
		m.log.Error("volume ownership: lchown failed", "path", path, "err", err)
	}
	// chmod follows symlinks: it would change the target's mode.
	if info.Mode()&fs.ModeSymlink != 0 {
		return
	}
	// info's mode is from before the chown, which clears a file's setuid
	// and setgid bits: they are put back, as in the kubelet.
	if err := os.Chmod(path, ownershipMode(info.Mode(), readOnly)); err != nil {
		m.log.Error("volume ownership: chmod failed", "path", path, "err", err)
	}
}
