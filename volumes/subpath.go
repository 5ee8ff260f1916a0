package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// SubPath returns the host path of subPath inside the volume at volPath,
// creating it as a directory (with the volume's mode) when it does not
// exist, as the kubelet does. It refuses absolute paths, ".." and a path
// whose symlinks resolve outside the volume. The returned path has its
// symlinks resolved (a configMap key mounted by subPath is the file of the
// version current at container creation, as in the kubelet).
func SubPath(volPath, subPath string) (string, error) {
	if filepath.IsAbs(subPath) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	for _, part := range strings.Split(subPath, "/") {
		if part == ".." {
			return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
		}
	}
	root, err := filepath.EvalSymlinks(volPath)
	if err != nil {
		return "", fmt.Errorf("volume path %s: %w", volPath, err)
	}
	full := filepath.Join(root, subPath)
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) {
		info, err := os.Stat(root)
		if err != nil {
			return "", err
		}
		// The volume root's whole mode, setgid (fsGroup) and sticky (a
		// tmpfs root) included, as the kubelet's GetMode + SafeMakeDir.
		if err := mkdirInside(root, subPath, info.Mode()); err != nil {
			return "", err
		}
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("subPath %s: %w", subPath, err)
	}
	if resolved != root && !strings.HasPrefix(resolved, root+"/") {
		return "", fmt.Errorf("subpath %q not within volume path %q", resolved, root)
	}
	return resolved, nil
}

// mkdirInside creates root/sub one component at a time, refusing to follow
// a symlink out of root on the way (the kubelet's SafeMakeDir). Each
// component is created and opened relative to the descriptor of its
// parent, never by path, and opened without following a symlink: a
// container swapping a component for a symlink while this runs makes it
// fail, and nothing is created outside root (CVE-2021-25741's class).
func mkdirInside(root, sub string, perm fs.FileMode) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open volume %s: %w", root, err)
	}
	defer func() { _ = unix.Close(fd) }()
	cur := root
	for _, part := range strings.Split(filepath.Clean(sub), "/") {
		if part == "" || part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		created := true
		if err := unix.Mkdirat(fd, part, uint32(perm.Perm())); errors.Is(err, unix.EEXIST) {
			created = false
		} else if err != nil {
			return fmt.Errorf("create subPath directory %s: %w", cur, err)
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return fmt.Errorf("subpath %q: %s is a symlink or not a directory: %w", sub, cur, err)
			}
			return fmt.Errorf("open subPath directory %s: %w", cur, err)
		}
		_ = unix.Close(fd)
		fd = next
		if created {
			// Only what it created: an existing directory keeps its
			// mode. The whole mode (setgid, sticky), which Mkdirat's
			// umask-filtered permission bits lack.
			if err := unix.Fchmod(fd, unixMode(perm)); err != nil {
				return fmt.Errorf("chmod subPath directory %s: %w", cur, err)
			}
		}
	}
	return nil
}

// unixMode is m in chmod(2)'s bits: permissions, setuid, setgid, sticky.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// ExpandSubPathExpr expands $(VAR) references in a subPathExpr from the
// container's environment, as the kubelet's ExpandContainerVolumeMounts
// does: $$ is a literal $, and a variable that is unset or empty is an
// error naming every such variable.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	missing := map[string]bool{}
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '$' || i+1 >= len(expr) {
			b.WriteByte(c)
			continue
		}
		switch expr[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(expr[i+2:], ')')
			if end < 0 {
				b.WriteString(expr[i:])
				i = len(expr)
				continue
			}
			name := expr[i+2 : i+2+end]
			v, ok := env[name]
			if !ok || v == "" {
				missing[name] = true
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("missing value for %s", strings.Join(names, ", "))
	}
	return b.String(), nil
}
