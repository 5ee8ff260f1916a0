package containerd

import (
	"context"
	"time"

	"github.com/skiffnode/skiff/supervisor"
)

// restartPolicy is the managed containerd's restart back-off: 1 s doubling
// to 30 s, forgotten after a minute of running.
var restartPolicy = supervisor.Policy{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute}

// supervise restarts containerd whenever it exits, until ctx is done (see
// supervisor.Loop). It owns m.cur from the start (p is the running first
// process) and closes m.done when it returns: when ctx is done (Stop) or
// another containerd took over the root. Stop stops the last process after
// supervise has returned. Blocking.
func (m *Managed) supervise(ctx context.Context, p supervisor.Process) {
	defer close(m.done)
	loop := supervisor.Loop{
		Name:   "containerd",
		Note:   "running containers are not affected",
		Launch: m.launch,
		Restarted: func(p supervisor.Process) {
			m.mu.Lock()
			m.cur = p
			m.restarts++
			m.mu.Unlock()
		},
		Policy: restartPolicy,
		Clock:  m.clock,
		Logger: m.logger,
	}
	loop.Run(ctx, p)
}
