package volumes

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountInfoPath is where the kernel lists this process's mounts.
const mountInfoPath = "/proc/self/mountinfo"

// mountPoint is one line of mountinfo: where a filesystem is mounted and
// with which propagation tags (the optional fields, e.g. "shared:1").
type mountPoint struct {
	Path     string
	FSType   string
	Optional string
}

// readMountInfo parses mountinfo at path. Mount points are unescaped (the
// kernel writes space, tab, newline and backslash as octal escapes).
func readMountInfo(path string) ([]mountPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountPoint
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options optional... - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 6 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mountPoint{
			Path:     unescapeMountPath(fields[4]),
			Optional: strings.Join(fields[6:sep], " "),
			FSType:   fields[sep+1],
		})
	}
	return out, sc.Err()
}

// unescapeMountPath decodes mountinfo's \ooo octal escapes.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder returns the mount points at or below dir, deepest first (the
// order to unmount them in). Each path appears once even if stacked.
func mountsUnder(infoPath, dir string) ([]string, error) {
	mps, err := readMountInfo(infoPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", infoPath, err)
	}
	dir = filepath.Clean(dir)
	seen := map[string]bool{}
	var out []string
	for _, mp := range mps {
		if (mp.Path == dir || strings.HasPrefix(mp.Path, dir+"/")) && !seen[mp.Path] {
			seen[mp.Path] = true
			out = append(out, mp.Path)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// isMountPoint reports whether something is mounted at exactly dir.
func isMountPoint(infoPath, dir string) (bool, error) {
	mps, err := readMountInfo(infoPath)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", infoPath, err)
	}
	dir = filepath.Clean(dir)
	for _, mp := range mps {
		if mp.Path == dir {
			return true, nil
		}
	}
	return false, nil
}

// mountTmpfs mounts a tmpfs of size bytes (0: the kernel's default, half
// of RAM) at dir, like the kubelet's memory-medium emptyDir.
func mountTmpfs(dir string, size int64) error {
	opts := ""
	if size > 0 {
		opts = "size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return nil
}

// unmount unmounts dir; a dir that is not a mount point (any more) is not
// an error. A busy mount is detached lazily: the pod's containers are gone,
// so what still holds it is a stray process, and the directory must go.
func unmount(dir string) error {
	err := unix.Unmount(dir, unix.UMOUNT_NOFOLLOW)
	switch {
	case err == nil, errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.EBUSY):
		if err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
		return nil
	default:
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
}
