package containerd

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLeftoverPid(t *testing.T) {
	root := t.TempDir()
	m := &Managed{paths: pathsFor(root)}
	if err := os.MkdirAll(m.paths.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, content string
	}{
		{"no pid file", ""},
		{"garbage", "abc\n"},
		{"dead pid", "999999999\n"},
		// Our own test process is alive but is not a containerd running this
		// root's config: a reused pid must not be killed.
		{"unrelated live process", strconv.Itoa(os.Getpid()) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(m.paths.pidFile)
			if tt.content != "" {
				if err := os.WriteFile(m.paths.pidFile, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if pid, ok := m.leftoverPid(); ok {
				t.Fatalf("leftoverPid = %d, true; want none", pid)
			}
		})
	}
}

func TestTakeOverRemovesStaleSocket(t *testing.T) {
	root := t.TempDir()
	m := &Managed{paths: pathsFor(root)}
	if err := os.MkdirAll(m.paths.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A regular file stands in for a socket nobody listens on.
	for _, p := range []string{m.paths.socket, m.paths.socket + ".ttrpc", m.paths.pidFile} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.takeOver(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{m.paths.socket, m.paths.socket + ".ttrpc", m.paths.pidFile} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s not removed: %v", p, err)
		}
	}
}

func TestAliveAndLogTail(t *testing.T) {
	if !alive(os.Getpid()) {
		t.Error("own process not alive")
	}
	if alive(999999999) {
		t.Error("impossible pid alive")
	}
	path := filepath.Join(t.TempDir(), "log")
	var lines []string
	for i := 0; i < 20; i++ {
		lines = append(lines, "line"+strconv.Itoa(i))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path, 3); got != "line17\nline18\nline19" {
		t.Errorf("logTail = %q", got)
	}
}
