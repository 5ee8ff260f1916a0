package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/atomicfile"
)

const (
	// readyTimeout bounds how long a start or restart waits for Ready.
	readyTimeout = 60 * time.Second
	// readyInterval is how often Ready is probed while waiting.
	readyInterval = 100 * time.Millisecond
	// rollbackTimeout bounds stopping a child whose start failed, under a
	// fresh context (the start's may have ended).
	rollbackTimeout = 10 * time.Second
	// logTailLines is how much of the child's log a failed start quotes.
	logTailLines = 15
)

// Spec describes a Daemon. Name, Binary, LogFile, PidFile, Marker, Policy
// and Logger are required.
type Spec struct {
	// Name names the daemon in logs and errors ("containerd").
	Name string
	// Note is appended to the "exited; restarting" log line; may be empty.
	Note string
	// Binary and Args are the child's executable and arguments.
	Binary string
	Args   []string
	// Env is the child's environment ("KEY=value"); nil: skiff's own.
	Env []string
	// LogFile receives the child's stdout and stderr (appended).
	LogFile string
	// PidFile holds the running child's pid.
	PidFile string
	// Marker is an argument in Args that only this daemon's children have
	// (their config file, their data directory): a pid in PidFile names a
	// process of ours only if it has Marker among its arguments.
	Marker string
	// StartedAttrs are logged, after the pid, on the "started <Name>" line.
	StartedAttrs []any
	// Prepare, if set, runs before every start; its error fails the start.
	Prepare func() error
	// Ready is one readiness probe: nil when the child serves. It is
	// polled until it succeeds, the child exits or the start times out.
	Ready func(ctx context.Context) error
	// Target names what Ready waits for in the not-ready error ("at
	// https://127.0.0.1:6443", "CRI socket /r/containerd.sock").
	Target string
	// AfterReady, if set, runs after every successful Ready; its error
	// fails the start (the child is stopped).
	AfterReady func(ctx context.Context) error
	// Policy is the restart back-off.
	Policy Policy
	// Clock times the back-off (nil: the real clock).
	Clock  clock.Clock
	Logger *slog.Logger
}

// Daemon is a child process that skiff keeps running: it replaces one that
// an earlier run left behind (StopLeftover), starts the child and waits
// until it is ready, keeps its pid file, restarts it with a back-off
// whenever it exits (Start), and stops it (Stop). Its methods are safe for
// concurrent use.
type Daemon struct {
	spec Spec
	// start starts one child; StartChild, or a fake in tests.
	start func(binary string, args, env []string, logPath, pidFile string) (Process, error)
	done  chan struct{} // closed when supervision has returned

	mu       sync.Mutex
	cancel   context.CancelFunc // ends supervision; nil until Start succeeded
	cur      Process            // the latest child; written by Start, then the loop
	restarts int
}

// NewDaemon returns a Daemon following s; nothing runs until Start.
func NewDaemon(s Spec) *Daemon {
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	return &Daemon{spec: s, start: startChild, done: make(chan struct{})}
}

func startChild(binary string, args, env []string, logPath, pidFile string) (Process, error) {
	c, err := StartChild(binary, args, env, logPath, pidFile)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// StopLeftover stops the process that an earlier skiff run left running
// (PidFile names it and it has Marker among its arguments) and removes the
// stale pid file.
func (d *Daemon) StopLeftover(ctx context.Context) error {
	if pid, ok := LeftoverPid(d.spec.PidFile, d.spec.Marker); ok {
		d.spec.Logger.Warn("stopping "+d.spec.Name+" left over from an earlier run", "pid", pid)
		if err := StopPid(ctx, pid); err != nil {
			return fmt.Errorf("stop leftover %s (pid %d): %w", d.spec.Name, pid, err)
		}
	}
	if err := os.Remove(d.spec.PidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale pid file: %w", err)
	}
	return nil
}

// Start starts the child, waits until it is ready (bounded by ctx and a
// minute) and supervises it: it is restarted after the back-off whenever
// it exits, until Stop, or until a restart finds that another skiff runs
// this daemon now (see ErrReplaced). ctx bounds only this start. On error
// nothing is left running. Call it at most once.
func (d *Daemon) Start(ctx context.Context) error {
	first, err := d.launch(ctx, false)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(context.Background())
	d.mu.Lock()
	d.cur, d.cancel = first, cancel
	d.mu.Unlock()
	loop := Loop{
		Name: d.spec.Name, Note: d.spec.Note, Launch: d.launch, Restarted: d.restarted,
		Policy: d.spec.Policy, Clock: d.spec.Clock, Logger: d.spec.Logger,
	}
	go func() {
		defer close(d.done)
		loop.Run(sctx, first)
	}()
	return nil
}

// Pid is the process ID of the latest child (maybe exited); 0 before
// Start.
func (d *Daemon) Pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return 0
	}
	return d.cur.Pid()
}

// Restarts is how often the child has been restarted.
func (d *Daemon) Restarts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restarts
}

// Done is closed when supervision has ended: after Stop, or when another
// skiff took the daemon over. Never closed if Start failed.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Stop ends supervision (waiting for a restart in progress to finish or
// roll back), then stops the child (see the package function Stop):
// SIGTERM, then SIGKILL and an error when ctx ends first. Idempotent;
// blocks until the child is gone. Nothing to do before Start succeeded.
func (d *Daemon) Stop(ctx context.Context) error {
	d.mu.Lock()
	cancel := d.cancel
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-d.done
	d.mu.Lock()
	p := d.cur
	d.mu.Unlock()
	return Stop(ctx, p, d.spec.Name, d.spec.Logger)
}

func (d *Daemon) restarted(p Process) {
	d.mu.Lock()
	d.cur = p
	d.restarts++
	d.mu.Unlock()
}

// launch starts one child and waits until it is ready (see Start); with
// restart set it refuses (ErrReplaced) to start a rival of a child that
// another skiff started. On error nothing is left running.
func (d *Daemon) launch(ctx context.Context, restart bool) (_ Process, retErr error) {
	s := &d.spec
	if restart {
		if pid, ok := LeftoverPid(s.PidFile, s.Marker); ok {
			return nil, fmt.Errorf("%w (pid %d in %s)", ErrReplaced, pid, s.PidFile)
		}
	}
	if s.Prepare != nil {
		if err := s.Prepare(); err != nil {
			return nil, err
		}
	}
	c, err := d.start(s.Binary, s.Args, s.Env, s.LogFile, s.PidFile)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
			defer cancel()
			_ = Stop(ctx, c, s.Name, s.Logger)
		}
	}()
	attrs := append(append([]any{"pid", c.Pid()}, s.StartedAttrs...), "log", s.LogFile)
	s.Logger.Info("started "+s.Name, attrs...)
	if err := atomicfile.Write(s.PidFile, []byte(strconv.Itoa(c.Pid())+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write %s pid file: %w", s.Name, err)
	}
	if err := d.waitReady(ctx, c); err != nil {
		return nil, err
	}
	if s.AfterReady != nil {
		if err := s.AfterReady(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// waitReady polls Ready until it succeeds, p exits, or ctx (bounded by
// readyTimeout) ends; the errors quote the end of the child's log.
func (d *Daemon) waitReady(ctx context.Context, p Process) error {
	s := &d.spec
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(readyInterval)
	defer tick.Stop()
	for {
		lastErr := s.Ready(ctx)
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited during start (%s); log %s ends with:\n%s",
				s.Name, ExitStatus(p.ExitErr()), s.LogFile, LogTail(s.LogFile, logTailLines))
		case <-ctx.Done():
			return fmt.Errorf("%s %s not ready: %w (last error: %w); log %s ends with:\n%s",
				s.Name, s.Target, ctx.Err(), lastErr, s.LogFile, LogTail(s.LogFile, logTailLines))
		case <-tick.C:
		}
	}
}
