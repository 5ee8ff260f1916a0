package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// ErrReplaced is returned (wrapped) by a Launch that refuses to start a
// rival of a process another skiff now runs for the same root: supervision
// ends instead of retrying.
var ErrReplaced = errors.New("another process serves this root")

// Loop restarts a process whenever it exits. Its fields are set before Run
// and not changed after.
type Loop struct {
	// Name names the process in logs ("containerd").
	Name string
	// Note is appended to the "exited; restarting" log line (e.g. "running
	// containers are not affected"); may be empty.
	Note string
	// Launch starts one process and waits until it is ready; restart is
	// true for every launch made by Run. On error nothing is left running.
	Launch func(ctx context.Context, restart bool) (Process, error)
	// Restarted publishes a restarted, ready process to its owner; called
	// from Run's goroutine before the next wait.
	Restarted func(Process)
	Policy    Policy
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Run supervises p, the running first process, until ctx is done or a
// Launch fails with ErrReplaced: whenever the current process exits it
// waits the back-off and launches the next, retrying failed launches with
// a growing delay. It never stops a process itself: its owner does, after
// Run has returned, so no restart can race a shutdown (a process launched
// just as ctx ended is published all the same, for the owner to stop).
// Blocking.
func (l *Loop) Run(ctx context.Context, p Process) {
	b := NewBackoff(l.Policy)
	readyAt := l.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.Exited():
		}
		ran := l.Clock.Since(readyAt)
		delay := b.Next(ran)
		msg := l.Name + " exited; restarting it"
		if l.Note != "" {
			msg += " (" + l.Note + ")"
		}
		l.Logger.Error(msg, "pid", p.Pid(), "status", ExitStatus(p.ExitErr()),
			"ran", ran.Round(time.Millisecond), "restartIn", delay)
		np, ok := l.relaunch(ctx, b, delay)
		if np == nil {
			return
		}
		// Taken before the new process is published, so whoever sees it
		// knows the stable-run timer has started.
		readyAt = l.Clock.Now()
		p = np
		l.Restarted(p)
		if !ok {
			return
		}
		l.Logger.Info(l.Name+" restarted and ready", "pid", p.Pid())
	}
}

// relaunch waits delay, then launches until one succeeds (nil, false when
// ctx ends or another process took over the root first). A process
// launched as ctx ended comes back with ok false.
func (l *Loop) relaunch(ctx context.Context, b *Backoff, delay time.Duration) (Process, bool) {
	for {
		if !l.sleep(ctx, delay) {
			return nil, false
		}
		p, err := l.Launch(ctx, true)
		if err == nil {
			return p, ctx.Err() == nil
		}
		if errors.Is(err, ErrReplaced) {
			l.Logger.Warn("not restarting "+l.Name+": another one serves this root now", "err", err)
			return nil, false
		}
		if ctx.Err() != nil {
			return nil, false
		}
		delay = b.Next(0)
		l.Logger.Error("restarting "+l.Name+" failed; retrying", "err", err, "retryIn", delay)
	}
}

// sleep waits d on l's clock; false if ctx ended first.
func (l *Loop) sleep(ctx context.Context, d time.Duration) bool {
	t := l.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
