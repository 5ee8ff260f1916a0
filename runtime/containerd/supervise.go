package containerd

import (
	"context"
	"errors"
	"time"
)

// Restart policy of the managed containerd: the first restart after a
// crash waits restartInitial, each further one without a stable run in
// between twice as long, up to restartMax. A containerd that ran for
// restartResetAfter counts as stable: its next crash starts over.
const (
	restartInitial    = time.Second
	restartMax        = 30 * time.Second
	restartResetAfter = time.Minute
)

// errReplaced says that another containerd now serves this root (a newer
// skiff took it over): the supervisor must not start a rival.
var errReplaced = errors.New("another containerd runs on this root")

// backoff is an exponential back-off that forgets after a stable run. Not
// safe for concurrent use; the zero value is not usable (see newBackoff).
type backoff struct {
	initial, max, resetAfter time.Duration
	cur                      time.Duration // the last delay; 0: none yet
}

func newBackoff(initial, maxDelay, resetAfter time.Duration) *backoff {
	return &backoff{initial: initial, max: maxDelay, resetAfter: resetAfter}
}

// next returns the delay before the next attempt, given how long the last
// attempt lasted (0 for one that failed at once): initial after a run of
// at least resetAfter (or at first), else twice the last delay, capped at
// max.
func (b *backoff) next(ran time.Duration) time.Duration {
	if b.cur == 0 || ran >= b.resetAfter {
		b.cur = b.initial
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

// supervise restarts containerd whenever it exits, until ctx is done. It
// owns m.cur from the start (p is the running first process) and closes
// m.done when it returns: when ctx is done (Stop) or another containerd
// took over the root. It never stops a process itself: Stop does, after
// supervise has returned, so no restart can race the shutdown. Blocking.
func (m *Managed) supervise(ctx context.Context, p process) {
	defer close(m.done)
	b := newBackoff(restartInitial, restartMax, restartResetAfter)
	readyAt := m.clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.Exited():
		}
		ran := m.clock.Since(readyAt)
		delay := b.next(ran)
		m.logger.Error("containerd exited; restarting it (running containers are not affected)",
			"pid", p.Pid(), "status", exitStatus(p.ExitErr()), "ran", ran.Round(time.Millisecond), "restartIn", delay)
		for {
			if !m.sleep(ctx, delay) {
				return
			}
			np, err := m.launch(ctx, true)
			if err == nil {
				p = np // owned now, even if ctx ended meanwhile: Stop stops it
				break
			}
			if errors.Is(err, errReplaced) {
				m.logger.Warn("not restarting containerd: another one serves this root now", "err", err)
				return
			}
			if ctx.Err() != nil {
				return
			}
			delay = b.next(0)
			m.logger.Error("restarting containerd failed; retrying", "err", err, "retryIn", delay)
		}
		// Taken before m.cur is published, so whoever sees the new pid
		// (Pid, Restarts) knows the stable-run timer has started.
		readyAt = m.clock.Now()
		m.mu.Lock()
		m.cur = p
		m.restarts++
		n := m.restarts
		m.mu.Unlock()
		m.logger.Info("containerd restarted and ready", "pid", p.Pid(), "restarts", n)
	}
}

// sleep waits d on m's clock; false if ctx ended first.
func (m *Managed) sleep(ctx context.Context, d time.Duration) bool {
	t := m.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
