package containerd

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/internal/supervisor"
)

// newTestManaged is a Managed on root that has not started.
func newTestManaged(t *testing.T, root string, ready func(context.Context, string) error) *Managed {
	t.Helper()
	m := &Managed{cfg: Config{Ready: ready}, paths: pathsFor(root), logger: slog.New(slog.DiscardHandler)}
	m.d = supervisor.NewDaemon(m.spec())
	if err := os.MkdirAll(m.paths.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTakeOverRemovesStaleSocket(t *testing.T) {
	m := newTestManaged(t, t.TempDir(), nil)
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

// containerd runs with this root's config, which marks it in the pid
// file's process, and its pid file is RootDir/containerd/containerd.pid.
func TestSpec(t *testing.T) {
	m := newTestManaged(t, "/r", nil)
	s := m.spec()
	if want := []string{"--config", "/r/containerd/config.toml"}; !slices.Equal(s.Args, want) {
		t.Errorf("args %q, want %q", s.Args, want)
	}
	if s.Marker != "/r/containerd/config.toml" || s.PidFile != "/r/containerd/containerd.pid" || s.Name != "containerd" {
		t.Errorf("marker %q, pid file %q, name %q", s.Marker, s.PidFile, s.Name)
	}
	if s.Policy != restartPolicy || s.Prepare == nil || s.Ready == nil {
		t.Errorf("policy %+v, prepare set %t, ready set %t", s.Policy, s.Prepare != nil, s.Ready != nil)
	}
}

// The readiness probe waits for the socket, then asks Config.Ready about
// the CRI endpoint.
func TestReady(t *testing.T) {
	tests := []struct {
		name     string
		socket   bool
		probeErr error
		wantErr  string // "": ready
		wantCall bool
	}{
		{name: "no socket", wantErr: "socket not created yet"},
		{name: "socket not serving CRI", socket: true, probeErr: errors.New("connection refused"), wantErr: "connection refused", wantCall: true},
		{name: "ready", socket: true, wantCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var called string
			m := newTestManaged(t, t.TempDir(), func(_ context.Context, endpoint string) error {
				called = endpoint
				return tt.probeErr
			})
			if tt.socket {
				if err := os.WriteFile(m.paths.socket, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := m.ready(context.Background())
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("ready = %v, want %q", err, tt.wantErr)
			}
			if want := "unix://" + filepath.Join(m.paths.dir, "containerd.sock"); tt.wantCall && called != want {
				t.Errorf("Ready asked about %q, want %q", called, want)
			}
			if !tt.wantCall && called != "" {
				t.Errorf("Ready asked about %q before the socket exists", called)
			}
		})
	}
}

func TestStartNeedsReady(t *testing.T) {
	no := false
	_, err := Start(context.Background(), Config{RootDir: t.TempDir(), SandboxImage: "p", RestrictOOMScoreAdj: &no})
	if err == nil || !strings.Contains(err.Error(), "Ready is required") {
		t.Fatalf("Start without Ready: %v", err)
	}
}
