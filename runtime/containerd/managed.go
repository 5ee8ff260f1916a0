package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/skiffnode/skiff/internal/atomicfile"
	"github.com/skiffnode/skiff/internal/supervisor"
)

// restartPolicy is the managed containerd's restart back-off: 1 s doubling
// to 30 s, forgotten after a minute of running.
var restartPolicy = supervisor.Policy{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute}

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
// config and root, after a back-off (restartPolicy). The restarted containerd
// reconnects to the shims, so containers keep running. Clients reconnect by
// themselves (gRPC). Stop ends supervision before it stops containerd, so a
// shutdown never restarts it.
type Managed struct {
	cfg    Config
	paths  paths
	logger *slog.Logger
	d      *supervisor.Daemon
}

// Start asks Binary for its version unless Config.Version is set, writes
// RootDir/containerd/config.toml in that version's schema and the registry hosts files
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
	if cfg.Version == "" {
		if cfg.Version, err = BinaryVersion(ctx, cfg.Binary); err != nil {
			return nil, fmt.Errorf("containerd: %w", err)
		}
	}
	p := pathsFor(cfg.RootDir)
	m := &Managed{cfg: cfg, paths: p, logger: cfg.Logger.With("component", "containerd")}
	m.d = supervisor.NewDaemon(m.spec())
	for _, dir := range []string{p.dir, p.root, p.state, p.tmp, cfg.CNIConfDir} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, fmt.Errorf("create containerd directories: %w", err)
		}
	}
	if err := traversable(cfg.RootDir, m.logger); err != nil {
		return nil, err
	}
	if err := m.takeOver(ctx); err != nil {
		return nil, err
	}
	if err := writeConfigFiles(cfg, p); err != nil {
		return nil, err
	}
	if err := m.d.Start(ctx); err != nil {
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

// spec is how the supervisor runs containerd: its config file marks a
// containerd of this root; a stale socket is removed before every start;
// it is ready when its CRI socket answers (Config.Ready).
func (m *Managed) spec() supervisor.Spec {
	return supervisor.Spec{
		Name: "containerd", Note: "running containers are not affected",
		Binary: m.cfg.Binary, Args: []string{"--config", m.paths.config}, Env: childEnv(m.cfg.BinDir, m.paths.tmp, os.Environ()),
		LogFile: m.cfg.LogFile, PidFile: m.paths.pidFile, Marker: m.paths.config,
		StartedAttrs: []any{"config", m.paths.config, "version", m.cfg.Version},
		Prepare:      m.removeStaleSocket,
		Ready:        m.ready, Target: "CRI socket " + m.paths.socket,
		Policy: restartPolicy, Logger: m.logger,
	}
}

// traversable gives dir the search (x) permission for everyone, as
// containerd's own state directory has: the root of a pod with a user
// namespace of its own is not the node's root, and its runc must reach
// the container's root filesystem under dir (RootDir/containerd/state).
func traversable(dir string, log *slog.Logger) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("root dir: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o011 != 0o011 {
		if err := os.Chmod(dir, mode|0o011); err != nil {
			return fmt.Errorf("root dir: %w", err)
		}
		log.Info("root dir made searchable for pods with user namespaces", "dir", dir, "mode", fmt.Sprintf("%#o", mode|0o011))
	}
	return nil
}

// defaultPath is containerd's PATH after binDir when skiff has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// childEnv is containerd's environment: skiff's, with TMPDIR set to
// tmpDir, and binDir (if set) first on PATH, so that containerd starts
// binDir's runc shim (it looks on PATH before its own directory). The
// shims inherit it: their runc exec writes each process spec to a
// temporary file (go-runc), which must work when /tmp is read-only.
func childEnv(binDir, tmpDir string, env []string) []string {
	out := make([]string, 0, len(env)+2)
	rest, hasPath := defaultPath, false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			rest, hasPath = v, true
			continue
		}
		if strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		out = append(out, kv)
	}
	switch {
	case binDir == "" && hasPath:
		out = append(out, "PATH="+rest)
	case binDir == "":
	case rest == "":
		out = append(out, "PATH="+binDir)
	default:
		out = append(out, "PATH="+binDir+":"+rest)
	}
	return append(out, "TMPDIR="+tmpDir)
}

// Version is the managed containerd's version ("v2.4.2").
func (m *Managed) Version() string { return m.cfg.Version }

// Endpoint is the CRI endpoint ("unix:///.../containerd.sock").
func (m *Managed) Endpoint() string { return "unix://" + m.paths.socket }

// Address is the socket path for the containerd Go client.
func (m *Managed) Address() string { return m.paths.socket }

// Done is closed when supervision has ended: after Stop, or when another
// skiff took over the root (its containerd replaced this one).
func (m *Managed) Done() <-chan struct{} { return m.d.Done() }

// Pid is the process ID of the latest containerd (maybe exited).
func (m *Managed) Pid() int { return m.d.Pid() }

// Restarts is how often the supervisor has restarted containerd.
func (m *Managed) Restarts() int { return m.d.Restarts() }

// Stop ends supervision (waiting for a restart in progress to finish or
// roll back), then sends containerd SIGTERM and waits for it to exit; when
// ctx ends first it sends SIGKILL, waits, and returns an error saying so.
// Running containers are not affected. Idempotent; blocks until the
// process is gone.
func (m *Managed) Stop(ctx context.Context) error { return m.d.Stop(ctx) }

// ready is one readiness probe: the CRI socket exists and Config.Ready
// says containerd serves CRI on it.
func (m *Managed) ready(ctx context.Context) error {
	if _, err := os.Stat(m.paths.socket); err != nil {
		return errors.New("socket not created yet")
	}
	return m.cfg.Ready(ctx, m.Endpoint())
}

// takeOver stops a containerd that an earlier skiff run started on this
// root (found through the pid file) and removes a stale socket (see
// removeStaleSocket).
func (m *Managed) takeOver(ctx context.Context) error {
	if err := m.d.StopLeftover(ctx); err != nil {
		return err
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
