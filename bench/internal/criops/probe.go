package criops

import (
	"context"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecProbe is an exec probe the floor makes on a running app container,
// as an agent's readiness probe does: one ExecSync of Command every Period,
// the first right after the container started (no initial delay), each
// bounded by Timeout (0: 1 s, the kubelet's default timeoutSeconds).
type ExecProbe struct {
	Command []string
	Period  time.Duration
	Timeout time.Duration
}

// prober is the probe loop of one floor pod: a goroutine owned by the
// pod's Started, stopped and waited for by Started.StopProbes.
type prober struct {
	cancel context.CancelFunc
	done   chan struct{}
	calls  atomic.Int64 // ExecSync calls made
	fails  atomic.Int64 // of which failed (error or non-zero exit)
}

// startProbes starts p's loop on container id; it runs until ctx ends or
// the returned prober is stopped. after is the clock (time.After outside
// tests).
func (f *Floor) startProbes(ctx context.Context, id string, p ExecProbe, after func(time.Duration) <-chan time.Time) *prober {
	ctx, cancel := context.WithCancel(ctx)
	pr := &prober{cancel: cancel, done: make(chan struct{})}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	probe := func(ctx context.Context) {
		resp, err := f.C.RT.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: p.Command, Timeout: int64(timeout / time.Second)})
		pr.calls.Add(1)
		if err != nil || resp.GetExitCode() != 0 {
			pr.fails.Add(1)
		}
	}
	go func() {
		defer close(pr.done)
		runProbes(ctx, p.Period, after, probe)
	}()
	return pr
}

// runProbes calls probe at once and then every period (counted from the
// end of the previous call, like the kubelet's ticker that skips missed
// ticks) until ctx ends. Blocking.
func runProbes(ctx context.Context, period time.Duration, after func(time.Duration) <-chan time.Time, probe func(context.Context)) {
	for {
		probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-after(period):
		}
	}
}

// stop cancels the loop and waits for it. Idempotent; nil-safe.
func (pr *prober) stop() {
	if pr == nil {
		return
	}
	pr.cancel()
	<-pr.done
}

// StopProbes stops the pod's probe loop, if any, and waits until it has
// returned: no ExecSync of this pod is in flight afterwards. Idempotent.
func (s *Started) StopProbes() {
	if s != nil {
		s.probes.stop()
	}
}

// ProbeCalls returns how many probe ExecSyncs the pod made and how many
// of them failed. Safe while the loop runs.
func (s *Started) ProbeCalls() (calls, fails int64) {
	if s == nil || s.probes == nil {
		return 0, 0
	}
	return s.probes.calls.Load(), s.probes.fails.Load()
}
