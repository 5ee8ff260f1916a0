package server

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// waitHealthy polls the client until the server answers; the server has no
// readiness signal of its own, so this is the one place a test polls.
func waitHealthy(t *testing.T, c *Client, errc <-chan error) {
	t.Helper()
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(10 * time.Second)
	for c.Healthz(context.Background()) != nil {
		select {
		case err := <-errc:
			t.Fatalf("server stopped: %v", err)
		case <-deadline:
			t.Fatal("server did not become healthy")
		case <-ticker.C:
		}
	}
}

// staleSocket leaves a socket file at path that nothing listens on.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestServeUnix(t *testing.T) {
	root := setupLogs(t)
	sock := filepath.Join(t.TempDir(), "run", "skiff.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	staleSocket(t, sock)

	pods := &fakePods{pods: []*v1.Pod{webPod(running())}}
	s := New(Config{Pods: pods, PodLogsDir: root, LogPollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.ServeUnix(ctx, sock) }()

	c, err := NewClient("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, c, errc)

	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket with 0600", fi.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(sock)); len(entries) != 1 {
		t.Errorf("socket directory holds %d entries, want only the socket", len(entries))
	}

	list, err := c.Pods(context.Background())
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("Pods = %v, %v; want the web pod", list, err)
	}
	if err := s.ServeUnix(ctx, sock); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second ServeUnix on a live socket = %v, want an in-use error", err)
	}

	// A followed stream must not hold up the shutdown.
	out := newNotifyBuffer()
	logErr := make(chan error, 1)
	go func() {
		logErr <- c.Logs(context.Background(), "default", "web", "app", LogOptions{Follow: true, TailLines: -1}, out)
	}()
	out.waitFor(t, "second run\nstill going\n")

	start := time.Now()
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Fatalf("ServeUnix after cancel = %v, want nil", err)
	}
	if d := time.Since(start); d >= shutdownTimeout {
		t.Errorf("shutdown took %v, want it to end the followed stream at once", d)
	}
	if err := waitErr(t, logErr); err != nil {
		t.Errorf("followed Logs at shutdown = %v, want a clean end", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left behind after shutdown: %v", err)
	}
}

func TestServeUnixRefusesNonSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skiff.sock")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := New(Config{}).ServeUnix(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("ServeUnix over a regular file = %v, want a not-a-socket error", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "data" {
		t.Error("ServeUnix clobbered a regular file")
	}
}

func TestServeTCP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := New(Config{}).ServeTCP(ctx, "127.0.0.1:not-a-port"); err == nil {
		t.Error("ServeTCP on a bad address succeeded, want error")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- New(Config{Pods: &fakePods{}}).Serve(ctx, ln) }()
	c, err := NewClient("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, c, errc)
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Errorf("Serve after cancel = %v, want nil", err)
	}
}
