package podlogs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"
)

// The container log class (no CVE: Aqua's "pod escape using log mounts",
// kube-hunter KHV047; see docs/security-tests.md): a container that can
// write its pod's log directory (a hostPath of /var/log) replaces its log,
// or a rotated sibling, with a symlink to a host file, then reads it back
// through `kubectl logs` or has the rotator copy or truncate it. skiff
// never opens a container log through a symlink.

// hostSecret is a host file outside the log directory, in the CRI log
// format so that a reader following the link would print it.
func hostSecret(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	line := "2026-11-24T10:00:00.000000000Z stdout F host secret\n"
	if err := os.WriteFile(p, []byte(strings.Repeat(line, 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCopyNeverFollowsSymlink: a log that is a symlink, or a FIFO, is
// refused with ErrNotRegular and nothing is written; a regular log next
// to them reads as usual.
func TestCopyNeverFollowsSymlink(t *testing.T) {
	dir, secret := t.TempDir(), hostSecret(t)
	link, fifo := filepath.Join(dir, "0.log"), filepath.Join(dir, "1.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, fifo} {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := Copy(ctx, &out, p, ReadOptions{TailLines: -1})
		cancel()
		if !errors.Is(err, ErrNotRegular) || out.Len() != 0 {
			t.Errorf("Copy(%s) = %v, wrote %q; want ErrNotRegular and nothing", filepath.Base(p), err, out.String())
		}
	}
	regular := filepath.Join(dir, "2.log")
	if err := os.WriteFile(regular, []byte("2026-11-24T10:00:00Z stdout F mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Copy(context.Background(), &out, regular, ReadOptions{TailLines: -1}); err != nil || out.String() != "mine\n" {
		t.Errorf("Copy(regular) = %q, %v", out.String(), err)
	}
}

// TestRotatorNeverFollowsSymlink: a running container's log that is a
// symlink to a large host file is neither rotated nor reopened; a
// rotated sibling that is a symlink is removed, not compressed (which
// would copy the host file into the log directory); the host file is
// untouched throughout.
func TestRotatorNeverFollowsSymlink(t *testing.T) {
	dir, secret := t.TempDir(), hostSecret(t)
	before, err := os.ReadFile(secret)
	if err != nil {
		t.Fatal(err)
	}
	linked, real := filepath.Join(dir, "linked", "0.log"), filepath.Join(dir, "real", "0.log")
	for _, p := range []string{linked, real} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, linked); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(strings.Repeat("x", 100)), 0o640); err != nil {
		t.Fatal(err)
	}
	planted := real + ".20261124-090000"
	if err := os.Symlink(secret, planted); err != nil {
		t.Fatal(err)
	}
	rt := &fakeRotateRuntime{logs: []RunningLog{{ID: "linked", Path: linked}, {ID: "real", Path: real}}}
	r := newTestRotator(t, rt, clocktesting.NewFakeClock(rotT0), 5, 1)
	if err := r.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rt.reopened, "linked") {
		t.Error("the symlinked log was rotated (reopened)")
	}
	if got := names(t, filepath.Dir(linked)); !slices.Equal(got, []string{"0.log"}) {
		t.Errorf("linked log directory: %v, want the symlink alone", got)
	}
	if got := names(t, filepath.Dir(real)); !slices.Equal(got, []string{"0.log", "0.log.20261124-100000"}) {
		t.Errorf("real log directory: %v, want the new log and the rotated one (the planted link removed, nothing compressed)", got)
	}
	if after, err := os.ReadFile(secret); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the host file changed: %v", err)
	}
}
