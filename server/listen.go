package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// shutdownTimeout bounds the graceful shutdown of a listener.
const shutdownTimeout = 5 * time.Second

// ServeUnix serves the API on a unix socket at path until ctx is done, then
// shuts down gracefully (at most a few seconds) and removes the socket. It
// blocks; it returns nil after a shutdown caused by ctx and an error if the
// socket cannot be set up or serving fails.
//
// A socket file left at path by a process that is gone is removed first; a
// socket something still listens on, or a file that is not a socket, is an
// error. The socket is created with mode 0600 (root only) without a window
// in which others could connect. Missing parent directories are created.
func (s *Server) ServeUnix(ctx context.Context, path string) error {
	ln, err := listenUnix(ctx, path)
	if err != nil {
		return err
	}
	created, statErr := os.Lstat(path)
	defer func() {
		// Remove the socket only if it is still ours.
		if now, err := os.Lstat(path); statErr == nil && err == nil && os.SameFile(now, created) {
			_ = os.Remove(path)
		}
	}()
	s.log.Info("serving local API", "socket", path)
	return s.Serve(ctx, ln)
}

// ServeTCP serves the API on a TCP address (host:port, the kubelet's
// --address and --read-only-port) until ctx is done; see ServeUnix.
func (s *Server) ServeTCP(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.log.Info("serving local API", "address", ln.Addr().String())
	return s.Serve(ctx, ln)
}

// Serve serves the API on ln until ctx is done, then shuts down gracefully
// within a few seconds and closes ln. Requests get contexts derived from ctx,
// so followed log streams end at shutdown. It blocks; it returns nil after a
// shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.Handler())
}

// serve is Serve with the handler to serve.
func (s *Server) serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve local API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("local API shutdown timed out; closing connections", "err", err)
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve local API: %w", err)
	}
	return nil
}

// listenUnix listens on a unix socket at path with mode 0600. The socket is
// bound inside a fresh 0700 directory, chmod-ed, then renamed into place, so
// nobody else can connect before the mode is set (a chmod after binding at
// path would leave such a window; changing the umask affects the whole
// process).
func listenUnix(ctx context.Context, path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if err := removeStaleSocket(ctx, path); err != nil {
		return nil, err
	}
	tmpDir, err := os.MkdirTemp(dir, ".skiff-sock-")
	if err != nil {
		return nil, fmt.Errorf("create socket: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmpDir) }()
	tmp := filepath.Join(tmpDir, "s")
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Closing must not unlink tmp's name: the socket lives at path by then.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("move socket into place: %w", err)
	}
	return ln, nil
}

// removeStaleSocket removes a socket at path that nothing listens on.
func removeStaleSocket(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("refusing to replace %s: not a socket", path)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	if conn, err := d.DialContext(dctx, "unix", path); err == nil {
		_ = conn.Close()
		return fmt.Errorf("socket %s is in use by another process", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}
