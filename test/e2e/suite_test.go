// Package e2e runs skiff end to end: the real `skiff agent` binary, its
// managed containerd, runc and CNI, driven through static pod manifests and
// observed through the agent's local API, its CLI and CRI.
//
// The suite runs only with SKIFF_E2E=1 and as root; otherwise every test
// skips at once, so plain `go test ./...` stays fast and unprivileged. Use
// `make e2e` (or `make test`), which installs the dependencies, builds
// bin/skiff and the test images first.
//
// Environment:
//
//	SKIFF_E2E=1        enable the suite
//	SKIFF_BIN          the skiff binary (default ../../bin/skiff, built if missing)
//	SKIFF_IMAGES       directory with busybox.tar and testserver.tar
//	                   (default ../../_output/images, built with test/images/build)
//	SKIFF_E2E_KEEP=1   keep the suite's root directory after the run
//	SKIFF_E2E_RUNTIME  "managed" (default): each agent starts its managed
//	                   containerd; "external": the suite starts one
//	                   containerd itself and every agent dials it with
//	                   --container-runtime-endpoint (make e2e-external)
//	SKIFF_E2E_CONTAINERD  the external mode's containerd (default
//	                   containerd from PATH, Debian's 1.6)
//
// Layout: one root directory per run (/tmp/ske2e-*, short because unix
// socket paths are limited to 108 bytes) is the agent's --root-dir for every
// test, with the image archives in <root>/images/. Each test gets
// <root>/t/<n>/ with its manifest directory, pod logs directory and agent
// log files. Tests run one at a time: only one agent may own the root. In
// external mode the suite's containerd lives in <root>/ext.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/runtime/cri"
)

// Names shared with the image builder and the agent.
const (
	busyboxImage    = "skiff.test/busybox:1.36"
	testserverImage = "skiff.test/testserver:1"
	nodeName        = "e2e"
	namespace       = "default"
)

// Suite is the state shared by all tests of one run.
type Suite struct {
	// Bin is the skiff binary under test.
	Bin string
	// Root is the agent's --root-dir for every test.
	Root string
	// external is the containerd the suite started in external mode; nil
	// in managed mode.
	external *externalRuntime
	// tests numbers the per-test directories.
	tests atomic.Int64
	// runtimeStuck are sandboxes containerd cannot remove (a container
	// whose task it cannot delete; the faults suite finds them): its leaks,
	// not skiff's, and no test's leftovers. Tests run one at a time.
	runtimeStuck map[string]bool
}

// theSuite is set by TestMain when the suite is enabled and ready; it is the
// one package-level variable, as TestMain cannot hand state to tests
// otherwise. nil means every test skips (see skipReason).
var theSuite *Suite

// skipReason says why theSuite is nil.
var skipReason = "e2e suite disabled: set SKIFF_E2E=1 and run as root (make e2e)"

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Getenv("SKIFF_E2E") != "1" {
		return m.Run()
	}
	if os.Geteuid() != 0 {
		skipReason = "e2e suite needs root (SKIFF_E2E=1 is set, but euid is " + strconv.Itoa(os.Geteuid()) + ")"
		return m.Run()
	}
	s, err := newSuite()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		return 1
	}
	theSuite = s
	code := m.Run()
	if err := s.teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e teardown:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// newSuite locates (or builds) the binary and images, prepares the root and,
// in external mode, starts the suite's containerd. On error nothing is left
// running.
func newSuite() (*Suite, error) {
	mode, err := runtimeMode()
	if err != nil {
		return nil, err
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	bin, err := locateBinary(repo)
	if err != nil {
		return nil, err
	}
	images, err := locateImages(repo)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("/tmp", "ske2e-")
	if err != nil {
		return nil, fmt.Errorf("create root dir: %w", err)
	}
	s := &Suite{Bin: bin, Root: root}
	for _, name := range []string{"busybox.tar", "testserver.tar"} {
		if err := copyFile(filepath.Join(images, name), filepath.Join(root, "images", name)); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "e2e: skiff %s, images %s, root %s, runtime %s\n", bin, images, root, mode)
	if mode == runtimeExternal {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if s.external, err = startExternal(ctx, root, bin); err != nil {
			return nil, errors.Join(err, s.teardown())
		}
	}
	return s, nil
}

// locateBinary returns SKIFF_BIN, or ../../bin/skiff, building it if missing.
func locateBinary(repo string) (string, error) {
	if bin := os.Getenv("SKIFF_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("SKIFF_BIN: %w", err)
		}
		return abs, nil
	}
	bin := filepath.Join(repo, "bin", "skiff")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", bin, "./cmd/skiff") // as make build
	cmd.Dir, cmd.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build skiff: %w: %s", err, out)
	}
	return bin, nil
}

// locateImages returns SKIFF_IMAGES, or builds the images (a no-op when
// they are up to date) into ../../_output/images.
func locateImages(repo string) (string, error) {
	if dir := os.Getenv("SKIFF_IMAGES"); dir != "" {
		return filepath.Abs(dir)
	}
	dir := filepath.Join(repo, "_output", "images")
	cmd := exec.Command("go", "run", "./test/images/build", "-out", dir)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build test images: %w: %s", err, out)
	}
	return dir, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// criEndpoint is the CRI socket of the runtime the agents use: the
// managed containerd's under the root, or the external one's.
func (s *Suite) criEndpoint() string {
	if s.external != nil {
		return s.external.endpoint()
	}
	return "unix://" + filepath.Join(s.Root, "containerd", "containerd.sock")
}

// teardown removes whatever the agents left behind: sandboxes still known
// to containerd, the external containerd, processes started from the root
// (containerd, shims), mounts under the root, and finally the root itself.
func (s *Suite) teardown() error {
	var errs []error
	if err := s.removeAllSandboxes(); err != nil {
		errs = append(errs, err)
	}
	if s.external != nil {
		errs = append(errs, s.external.stop())
	}
	killProcessesUnder(s.Root)
	unmountUnder(s.Root)
	if os.Getenv("SKIFF_E2E_KEEP") == "1" {
		fmt.Fprintln(os.Stderr, "e2e: keeping", s.Root)
	} else if err := os.RemoveAll(s.Root); err != nil {
		errs = append(errs, fmt.Errorf("remove root: %w", err))
	}
	return errors.Join(errs...)
}

// removeAllSandboxes stops and removes every sandbox of a containerd that
// still runs under the root (after all tests there should be none).
func (s *Suite) removeAllSandboxes() error {
	sock := strings.TrimPrefix(s.criEndpoint(), "unix://")
	if _, err := os.Stat(sock); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := cri.New(ctx, s.criEndpoint(), 30*time.Second)
	if err != nil {
		return nil // containerd is gone with its agent: nothing to remove.
	}
	defer rt.Close()
	sbs, err := rt.ListSandboxes(ctx, nil)
	if err != nil {
		return nil
	}
	var errs []error
	left := 0
	for _, sb := range sbs {
		err := errors.Join(rt.StopSandbox(ctx, sb.ID), rt.RemoveSandbox(ctx, sb.ID))
		if s.runtimeStuck[sb.ID] { // reported by the faults suite; killed below
			continue
		}
		errs, left = append(errs, err), left+1
	}
	if left > 0 {
		errs = append(errs, fmt.Errorf("%d sandboxes left after the suite", left))
	}
	return errors.Join(errs...)
}

// killProcessesUnder kills, by PID, every process whose command line
// mentions root: the managed containerd and its shims, which outlive an
// agent killed with SIGKILL. Only processes of this run match, as root is
// unique to it.
func killProcessesUnder(root string) {
	killProcesses(func(cmdline string) bool { return strings.Contains(cmdline, root) }, true)
}

// killProcesses kills, by PID, every process but this one whose command
// line matches: with SIGTERM first (up to 10 s to exit) when gentle, else
// with SIGKILL at once.
func killProcesses(match func(cmdline string) bool, gentle bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !match(string(cmdline)) {
			continue
		}
		if gentle {
			_ = unix.Kill(pid, unix.SIGTERM)
			waitGone(pid, 10*time.Second)
		}
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// waitGone polls until pid no longer exists or timeout passes.
func waitGone(pid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unmountUnder detaches every mount below root, deepest first.
func unmountUnder(root string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], root+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = unix.Unmount(points[i], unix.MNT_DETACH)
	}
}
