package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiffnode/skiff/runtime/cri"
)

const (
	// readyTimeout bounds how long Start waits for the CRI socket.
	readyTimeout = 60 * time.Second
	// leftoverStopTimeout bounds stopping a containerd left over from a
	// previous skiff run, before it is killed.
	leftoverStopTimeout = 10 * time.Second
	// cleanupTimeout bounds rollbacks under a fresh context.
	cleanupTimeout = 10 * time.Second
)

// Managed is a containerd child process of skiff. Its methods are safe for
// concurrent use.
//
// Lifetime: containerd runs in its own process group (a terminal's SIGINT
// reaches skiff only, which decides the shutdown order) with the parent-death
// signal SIGTERM, so containerd goes down with skiff even when skiff crashes.
// That is safe because containers do not depend on containerd: each runs
// under its own containerd-shim-runc-v2, which survives containerd restarts,
// and the next containerd (started by the next skiff) reconnects to them.
// Should a containerd of an earlier run still be alive anyway, Start finds it
// through the pid file and replaces it.
//
// Start and Stop do not supervise: if containerd exits on its own, Done is
// closed and restarting it (with a new Start) is the caller's choice.
type Managed struct {
	cfg     Config
	paths   paths
	logger  *slog.Logger
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error // the child's exit status; written before done is closed
}

// Start writes RootDir/containerd/config.toml, replaces a containerd left
// running by an earlier skiff run on the same root, starts containerd and
// waits until its CRI socket answers a Version call (bounded by ctx and one
// minute). ctx bounds only the start: the child keeps running until Stop,
// its own exit, or skiff's exit. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Managed, retErr error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := pathsFor(cfg.RootDir)
	m := &Managed{cfg: cfg, paths: p, logger: cfg.Logger.With("component", "containerd"), done: make(chan struct{})}
	for _, dir := range []string{p.dir, p.root, p.state, cfg.CNIConfDir} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, fmt.Errorf("create containerd directories: %w", err)
		}
	}
	if err := m.takeOver(ctx); err != nil {
		return nil, err
	}
	conf, err := renderConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(p.config, []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("write containerd config: %w", err)
	}
	logFile, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open containerd log: %w", err)
	}

	m.cmd = exec.Command(cfg.Binary, "--config", p.config)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	started := make(chan error, 1)
	// The goroutine owns the child until it exits. It keeps its OS thread
	// locked while the child lives: Pdeathsig fires when the *thread* that
	// forked exits, and a locked thread cannot be reused (and ended) by
	// another goroutine that exits locked.
	go func() {
		goruntime.LockOSThread()
		defer close(m.done)
		defer logFile.Close()
		if err := m.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		m.waitErr = m.cmd.Wait()
		_ = os.Remove(p.pidFile)
		// Exiting with the thread still locked ends the thread; fine.
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start containerd %s: %w", cfg.Binary, err)
	}
	defer func() {
		if retErr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			_ = m.Stop(ctx)
		}
	}()
	pid := m.cmd.Process.Pid
	m.logger.Info("started containerd", "pid", pid, "config", p.config, "log", cfg.LogFile)
	if err := writeFileAtomic(p.pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write containerd pid file: %w", err)
	}
	if err := m.waitReady(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Endpoint is the CRI endpoint ("unix:///.../containerd.sock").
func (m *Managed) Endpoint() string { return "unix://" + m.paths.socket }

// Address is the socket path for the containerd Go client.
func (m *Managed) Address() string { return m.paths.socket }

// Done is closed when the containerd process has exited.
func (m *Managed) Done() <-chan struct{} { return m.done }

// Stop sends containerd SIGTERM and waits for it to exit; when ctx ends
// first it sends SIGKILL, waits, and returns an error saying so. Running
// containers are not affected. Idempotent; blocks until the process is gone.
func (m *Managed) Stop(ctx context.Context) error {
	select {
	case <-m.done:
		return nil
	default:
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop containerd: %w", err)
	}
	select {
	case <-m.done:
		m.logger.Info("containerd stopped", "status", exitStatus(m.waitErr))
		return nil
	case <-ctx.Done():
	}
	m.logger.Warn("containerd did not stop in time; killing it")
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill containerd: %w", err)
	}
	<-m.done
	return fmt.Errorf("containerd did not stop in time and was killed: %w", ctx.Err())
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// waitReady polls the CRI socket until Version answers, the child exits,
// or the bounded ctx ends.
func (m *Managed) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastErr := errors.New("socket not created yet")
	for {
		if _, err := os.Stat(m.paths.socket); err == nil {
			r, err := cri.New(ctx, m.Endpoint(), 2*time.Second)
			if err == nil {
				_ = r.Close()
				return nil
			}
			lastErr = err
		}
		select {
		case <-m.done:
			return fmt.Errorf("containerd exited during start (%s); log %s ends with:\n%s",
				exitStatus(m.waitErr), m.cfg.LogFile, logTail(m.cfg.LogFile, 15))
		case <-ctx.Done():
			return fmt.Errorf("containerd CRI socket %s not ready: %w (last error: %w); log %s ends with:\n%s",
				m.paths.socket, ctx.Err(), lastErr, m.cfg.LogFile, logTail(m.cfg.LogFile, 15))
		case <-tick.C:
		}
	}
}

// takeOver stops a containerd that an earlier skiff run started on this
// root (found through the pid file) and removes a stale socket. A socket
// that answers but belongs to no known process is an error: skiff does not
// kill what it did not start.
func (m *Managed) takeOver(ctx context.Context) error {
	if pid, ok := m.leftoverPid(); ok {
		m.logger.Warn("stopping containerd left over from an earlier run", "pid", pid)
		if err := stopPid(ctx, pid); err != nil {
			return fmt.Errorf("stop leftover containerd (pid %d): %w", pid, err)
		}
	}
	if err := os.Remove(m.paths.pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale pid file: %w", err)
	}
	if _, err := os.Stat(m.paths.socket); err == nil {
		if conn, err := net.DialTimeout("unix", m.paths.socket, time.Second); err == nil {
			_ = conn.Close()
			return fmt.Errorf("%s is served by a process skiff did not start; stop it first", m.paths.socket)
		}
		for _, s := range []string{m.paths.socket, m.paths.socket + ".ttrpc"} {
			if err := os.Remove(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove stale socket: %w", err)
			}
		}
	}
	return nil
}

// leftoverPid returns the pid from the pid file if that process is alive
// and is a containerd running this root's config (pids get reused).
func (m *Managed) leftoverPid() (int, bool) {
	b, err := os.ReadFile(m.paths.pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !alive(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, false
	}
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if string(arg) == m.paths.config {
			return pid, true
		}
	}
	return 0, false
}

// stopPid stops a process that is not our child: SIGTERM, then SIGKILL
// after leftoverStopTimeout (or when ctx ends), polling until it is gone.
func stopPid(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	termCtx, cancel := context.WithTimeout(ctx, leftoverStopTimeout)
	defer cancel()
	if waitGone(termCtx, pid) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	killCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !waitGone(killCtx, pid) {
		return fmt.Errorf("process %d still alive after SIGKILL", pid)
	}
	return nil
}

func waitGone(ctx context.Context, pid int) bool {
	for alive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name: "pid (comm) S ...".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// writeFileAtomic writes data to a temp file next to path and renames it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (retErr error) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
