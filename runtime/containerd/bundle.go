package containerd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BundledPrograms are the executables of skiff's own runtime (make
// runtime), which a bundle directory holds side by side.
var BundledPrograms = []string{"containerd", "containerd-shim-runc-v2", "runc"}

// FindBundled returns the first of dirs that holds every one of
// BundledPrograms as an executable file, or "" when none does.
func FindBundled(dirs ...string) string {
	for _, dir := range dirs {
		if dir != "" && holdsAll(dir) {
			return dir
		}
	}
	return ""
}

func holdsAll(dir string) bool {
	for _, name := range BundledPrograms {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionTimeout bounds one `--version` run.
const versionTimeout = 10 * time.Second

// BinaryVersion runs `binary --version` and returns the version containerd
// prints: "v2.4.2" from "containerd github.com/containerd/containerd/v2
// v2.4.2 <revision>", "1.6.20~ds1" from Debian's 1.6.
func BinaryVersion(ctx context.Context, binary string) (string, error) {
	out, err := runVersion(ctx, binary)
	if err != nil {
		return "", err
	}
	f := strings.Fields(firstLine(out))
	if len(f) < 3 || f[0] != "containerd" {
		return "", fmt.Errorf("%s --version: unexpected output %q", binary, firstLine(out))
	}
	if _, _, err := parseVersion(f[2]); err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	return f[2], nil
}

// RuncVersion runs `binary --version` and returns runc's version ("1.5.3"
// from "runc version 1.5.3").
func RuncVersion(ctx context.Context, binary string) (string, error) {
	out, err := runVersion(ctx, binary)
	if err != nil {
		return "", err
	}
	v, ok := strings.CutPrefix(firstLine(out), "runc version ")
	if !ok || strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%s --version: unexpected output %q", binary, firstLine(out))
	}
	return strings.TrimSpace(v), nil
}

func runVersion(ctx context.Context, binary string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, fmt.Errorf("%s --version: %w: %s", binary, err, bytes.TrimSpace(ee.Stderr))
		}
		return nil, fmt.Errorf("%s --version: %w", binary, err)
	}
	return out, nil
}

func firstLine(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if sc.Scan() {
		return strings.TrimSpace(sc.Text())
	}
	return ""
}

// parseVersion returns the major and minor version of a containerd
// version string ("v2.4.2" -> 2, 4; "1.6.20~ds1" -> 1, 6; "3" -> 3, 0).
func parseVersion(v string) (major, minor int, err error) {
	s := strings.TrimPrefix(v, "v")
	nums := make([]int, 0, 2)
	for len(nums) < 2 && s != "" {
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(s)
		}
		if end == 0 {
			break
		}
		n, err := strconv.Atoi(s[:end])
		if err != nil {
			return 0, 0, fmt.Errorf("containerd version %q: %w", v, err)
		}
		nums = append(nums, n)
		s = s[end:]
		if s == "" || s[0] != '.' {
			break
		}
		s = s[1:]
	}
	if len(nums) == 0 || len(nums) == 1 && s != "" {
		return 0, 0, fmt.Errorf("containerd version %q: want <major>.<minor>[.<patch>]", v)
	}
	if len(nums) == 1 {
		return nums[0], 0, nil
	}
	return nums[0], nums[1], nil
}
