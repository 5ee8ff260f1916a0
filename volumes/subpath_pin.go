package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// subPathsDirName is the kubelet's directory of a pod's pinned subPath
// mounts: <pod dir>/volume-subpaths/<volume>/<container>/<mount index>.
const subPathsDirName = "volume-subpaths"

// SubPathMount returns the host path that container (of pod uid) mounts
// for the subPath sub of the volume named volume, set up at volPath;
// index is the mount's index in the container's volumeMounts. As the
// kubelet since CVE-2021-25741: the subPath is checked and created as
// SubPath does, then opened one component at a time from the volume's
// root without following any symlink, and that open file is bind-mounted
// at <pod dir>/volume-subpaths/<volume>/<container>/<index>, the path
// returned. The runtime mounts that bind mount, in a tree no container
// can write: a container that swaps a component of the subPath for a
// symlink after the check cannot redirect the mount out of the volume;
// one that swaps it before the open makes the call fail. A bind mount
// already there (the container restarted) is reused. Needs root; TearDown
// and CleanOrphans unmount and remove the bind mounts.
func (m *Manager) SubPathMount(uid types.UID, volume, container string, index int, volPath, sub string) (string, error) {
	resolved, err := SubPath(volPath, sub)
	if err != nil {
		return "", err
	}
	if m.afterSubPathCheck != nil {
		m.afterSubPathCheck()
	}
	target := filepath.Join(m.PodDir(uid), subPathsDirName, volume, container, strconv.Itoa(index))
	if mounted, err := isMountPoint(m.mountInfo, target); err != nil {
		return "", err
	} else if mounted {
		return target, nil
	}
	root, err := filepath.EvalSymlinks(volPath)
	if err != nil {
		return "", fmt.Errorf("volume path %s: %w", volPath, err)
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil {
		return "", err
	}
	fd, err := openNoSymlinks(root, rel)
	if err != nil {
		return "", fmt.Errorf("subPath %q of volume %q: %w", sub, volume, err)
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("subPath %q of volume %q: %w", sub, volume, err)
	}
	// Not mounted: what is there is a target left empty (by a bind
	// mount unmounted earlier), possibly of the other type.
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("subPath %q of volume %q: %w", sub, volume, err)
	}
	if err := makeBindTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return "", fmt.Errorf("subPath %q of volume %q: %w", sub, volume, err)
	}
	// The descriptor's magic link: the kernel binds the very file opened
	// above, whatever its path has become since.
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind-mount subPath %q of volume %q at %s: %w", sub, volume, target, err)
	}
	return target, nil
}

// openNoSymlinks opens root/rel with O_PATH one component at a time, each
// relative to its parent's descriptor and without following symlinks
// (the kubelet's doSafeOpen): a symlink anywhere, root included, is an
// error. rel must be clean and inside root ("." is root itself).
func openNoSymlinks(root, rel string) (int, error) {
	const flags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open(root, flags|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", root, err)
	}
	cur := root
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("%q leaves the volume", rel)
		}
		cur = filepath.Join(cur, part)
		next, err := unix.Openat(fd, part, flags, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", cur, err)
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("%s is a symlink (changed after the subPath was checked)", cur)
		}
	}
	return fd, nil
}

// makeBindTarget creates target's parents and target itself, a directory
// when dir, else an empty file, unless it exists as such.
func makeBindTarget(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if dir {
		if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}
