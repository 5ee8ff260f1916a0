package containerd

import (
	"context"
	"errors"
	"io/fs"
	"os"
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

func TestStartNeedsReady(t *testing.T) {
	no := false
	_, err := Start(context.Background(), Config{RootDir: t.TempDir(), SandboxImage: "p", RestrictOOMScoreAdj: &no})
	if err == nil || !strings.Contains(err.Error(), "Ready is required") {
		t.Fatalf("Start without Ready: %v", err)
	}
}
