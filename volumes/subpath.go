package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
// a symlink out of root on the way (the kubelet's SafeMakeDir).
func mkdirInside(root, sub string, perm fs.FileMode) error {
	cur := root
	for _, part := range strings.Split(filepath.Clean(sub), "/") {
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		created := true
		if err := os.Mkdir(next, perm); errors.Is(err, fs.ErrExist) {
			created = false
		} else if err != nil {
			return fmt.Errorf("create subPath directory: %w", err)
		}
		resolved, err := filepath.EvalSymlinks(next)
		if err != nil {
			return err
		}
		if resolved != root && !strings.HasPrefix(resolved, root+"/") {
			return fmt.Errorf("subpath %q not within volume path %q", resolved, root)
		}
		if created {
			// Only what it created: an existing directory keeps its mode.
			if err := os.Chmod(resolved, perm); err != nil {
				return err
			}
		}
		cur = resolved
	}
	return nil
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
