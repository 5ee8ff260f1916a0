package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/atomicfile"
	"github.com/skiffnode/skiff/supervisor"
)

const (
	// readyTimeout bounds how long a start or restart waits for the CRI
	// socket.
	readyTimeout = 60 * time.Second
	// cleanupTimeout bounds rollbacks under a fresh context.
	cleanupTimeout = 10 * time.Second
)

// Managed is a supervised containerd child process of skiff. Its methods
// are safe for concurrent use.
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
// Supervision: from Start until Stop a goroutine owned by Managed restarts
// containerd whenever it exits (crash, kill -9, OOM kill), with the same
// config and root, after a back-off (restartInitial doubling to restartMax,
// reset after restartResetAfter of running). The restarted containerd
// reconnects to the shims, so containers keep running. Clients reconnect by
// themselves (gRPC). Stop ends supervision before it stops containerd, so a
// shutdown never restarts it.
type Managed struct {
	cfg    Config
	paths  paths
	logger *slog.Logger
	clock  clock.Clock
	// launch starts one containerd and waits until it serves CRI; with
	// restart set it refuses (supervisor.ErrReplaced) to start a rival of a
	// containerd that another skiff started on this root. On error
	// nothing is left running. Replaced by fakes in tests.
	launch func(ctx context.Context, restart bool) (supervisor.Process, error)

	cancel context.CancelFunc // ends supervision
	done   chan struct{}      // closed when supervise has returned

	mu       sync.Mutex
	cur      supervisor.Process // the latest containerd; written by supervise only
	restarts int
}

// Start writes RootDir/containerd/config.toml and the registry hosts files
// (RootDir/containerd/certs.d), replaces a containerd left
// running by an earlier skiff run on the same root, starts containerd,
// waits until Config.Ready says its CRI socket serves (bounded by ctx and
// one minute) and starts supervising it. ctx bounds only the start: containerd
// keeps running (and is restarted) until Stop or skiff's exit. On error
// nothing is left running.
func Start(ctx context.Context, cfg Config) (*Managed, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Ready == nil {
		return nil, errors.New("containerd config: Ready is required")
	}
	p := pathsFor(cfg.RootDir)
	m := &Managed{
		cfg: cfg, paths: p, logger: cfg.Logger.With("component", "containerd"),
		clock: clock.RealClock{}, done: make(chan struct{}),
	}
	m.launch = m.launchChild
	for _, dir := range []string{p.dir, p.root, p.state, cfg.CNIConfDir} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, fmt.Errorf("create containerd directories: %w", err)
		}
	}
	if err := m.takeOver(ctx); err != nil {
		return nil, err
	}
	if err := writeConfigFiles(cfg, p); err != nil {
		return nil, err
	}
	if err := m.run(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// writeConfigFiles writes the registry hosts files (p.certsD) and
// config.toml for cfg, which must have its defaults filled in.
func writeConfigFiles(cfg Config, p paths) error {
	conf, err := renderConfig(cfg)
	if err != nil {
		return err
	}
	if err := writeHostsDir(p.certsD, cfg.RegistryHosts); err != nil {
		return err
	}
	if err := atomicfile.Write(p.config, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	return nil
}

// run launches the first containerd and starts the supervisor goroutine,
// which m.cancel ends and m.done waits for. On error nothing runs.
func (m *Managed) run(ctx context.Context) error {
	first, err := m.launch(ctx, false)
	if err != nil {
		return err
	}
	m.cur = first
	sctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.supervise(sctx, first)
	return nil
}

// launchChild implements launch with a real child process.
func (m *Managed) launchChild(ctx context.Context, restart bool) (_ supervisor.Process, retErr error) {
	if restart {
		if pid, ok := m.leftoverPid(); ok {
			return nil, fmt.Errorf("%w (pid %d in %s)", supervisor.ErrReplaced, pid, m.paths.pidFile)
		}
	}
	if err := m.removeStaleSocket(); err != nil {
		return nil, err
	}
	c, err := supervisor.StartChild(m.cfg.Binary, []string{"--config", m.paths.config}, m.cfg.LogFile, m.paths.pidFile)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			_ = supervisor.Stop(ctx, c, "containerd", m.logger)
		}
	}()
	pid := c.Pid()
	m.logger.Info("started containerd", "pid", pid, "config", m.paths.config, "log", m.cfg.LogFile)
	if err := atomicfile.Write(m.paths.pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write containerd pid file: %w", err)
	}
	if err := m.waitReady(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Endpoint is the CRI endpoint ("unix:///.../containerd.sock").
func (m *Managed) Endpoint() string { return "unix://" + m.paths.socket }

// Address is the socket path for the containerd Go client.
func (m *Managed) Address() string { return m.paths.socket }

// Done is closed when supervision has ended: after Stop, or when another
// skiff took over the root (its containerd replaced this one).
func (m *Managed) Done() <-chan struct{} { return m.done }

// Pid is the process ID of the latest containerd (maybe exited).
func (m *Managed) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur.Pid()
}

// Restarts is how often the supervisor has restarted containerd.
func (m *Managed) Restarts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restarts
}

// Stop ends supervision (waiting for a restart in progress to finish or
// roll back), then sends containerd SIGTERM and waits for it to exit; when
// ctx ends first it sends SIGKILL, waits, and returns an error saying so.
// Running containers are not affected. Idempotent; blocks until the
// process is gone.
func (m *Managed) Stop(ctx context.Context) error {
	m.cancel()
	<-m.done
	m.mu.Lock()
	p := m.cur
	m.mu.Unlock()
	return supervisor.Stop(ctx, p, "containerd", m.logger)
}

// waitReady polls the CRI socket (Config.Ready) until containerd serves,
// the child exits, or the bounded ctx ends.
func (m *Managed) waitReady(ctx context.Context, p supervisor.Process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastErr := errors.New("socket not created yet")
	for {
		if _, err := os.Stat(m.paths.socket); err == nil {
			err := m.cfg.Ready(ctx, m.Endpoint())
			if err == nil {
				return nil
			}
			lastErr = err
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("containerd exited during start (%s); log %s ends with:\n%s",
				supervisor.ExitStatus(p.ExitErr()), m.cfg.LogFile, supervisor.LogTail(m.cfg.LogFile, 15))
		case <-ctx.Done():
			return fmt.Errorf("containerd CRI socket %s not ready: %w (last error: %w); log %s ends with:\n%s",
				m.paths.socket, ctx.Err(), lastErr, m.cfg.LogFile, supervisor.LogTail(m.cfg.LogFile, 15))
		case <-tick.C:
		}
	}
}

// takeOver stops a containerd that an earlier skiff run started on this
// root (found through the pid file) and removes a stale socket (see
// removeStaleSocket).
func (m *Managed) takeOver(ctx context.Context) error {
	if pid, ok := m.leftoverPid(); ok {
		m.logger.Warn("stopping containerd left over from an earlier run", "pid", pid)
		if err := supervisor.StopPid(ctx, pid); err != nil {
			return fmt.Errorf("stop leftover containerd (pid %d): %w", pid, err)
		}
	}
	if err := os.Remove(m.paths.pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale pid file: %w", err)
	}
	return m.removeStaleSocket()
}

// removeStaleSocket removes the sockets of a containerd that is gone. A
// socket that answers is an error: skiff does not kill what it did not
// start.
func (m *Managed) removeStaleSocket() error {
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
	return supervisor.LeftoverPid(m.paths.pidFile, m.paths.config)
}
