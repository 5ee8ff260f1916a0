package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/systemd"
	"github.com/skiffnode/skiff/runtime"
)

// skiff agent as a systemd service (contrib/systemd/skiff.service,
// docs/decisions/0001-running-under-systemd.md): sd_notify messages from the
// agent's state, journald-friendly logs, and a test hook that hangs the
// sync loop for the watchdog's VM test.

// newNotifier takes NOTIFY_SOCKET and the watchdog variables out of the
// environment (see systemd.FromEnv); nil when skiff is not a notify
// service. Call before any child process starts.
func newNotifier(log *slog.Logger) *systemd.Notifier {
	n, err := systemd.FromEnv()
	if err != nil {
		log.Warn("systemd watchdog disabled", "err", err)
	}
	return n
}

// notifySystemd runs systemd.Run for the agent until ctx is done; a no-op
// without NOTIFY_SOCKET.
func notifySystemd(ctx context.Context, n *systemd.Notifier, a systemd.Agent, runtimeTimeout time.Duration, log *slog.Logger) {
	if n == nil {
		return
	}
	systemd.Run(ctx, systemd.Config{
		Sender: n, Agent: a, Watchdog: n.Watchdog(), Stale: heartbeatStale(runtimeTimeout),
		Clock: clock.RealClock{}, Logger: log,
	})
}

// heartbeatStale is how old the agent's heartbeat may get before the
// watchdog pings stop: a relist makes two CRI calls, each bounded by
// --runtime-request-timeout, so a runtime that hangs but answers with
// timeouts still lets the loop turn (skiff restarting would not help the
// runtime; the kubelet reports such a node NotReady instead). Only a loop
// stuck beyond that (a deadlock, a call ignoring its deadline) is one.
func heartbeatStale(runtimeTimeout time.Duration) time.Duration {
	return 2*runtimeTimeout + 10*time.Second
}

// hangSyncEnv is a test-only hook: SKIFF_TEST_HANG_SYNC=after:<duration>
// makes the agent's relist hang, ignoring its deadline, from <duration>
// after the agent started until it stops: the sync loop's heartbeat stops,
// so under systemd the watchdog pings stop and systemd restarts skiff
// (WatchdogSec= after the heartbeat went stale, see heartbeatStale). Never
// set it on a real node.
const hangSyncEnv = "SKIFF_TEST_HANG_SYNC"

// withHangHook returns rt, or rt wrapped by the hook of hangSyncEnv when
// it is set; an unparsable value is an error naming the variable.
func withHangHook(rt runtime.Runtime, log *slog.Logger) (runtime.Runtime, error) {
	v := os.Getenv(hangSyncEnv)
	if v == "" {
		return rt, nil
	}
	s, ok := strings.CutPrefix(v, "after:")
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d < 0 {
		return nil, fmt.Errorf("%s=%q: want after:<duration>, e.g. after:10s", hangSyncEnv, v)
	}
	log.Warn("test hook: the sync loop will hang", "env", hangSyncEnv, "after", d)
	return &hangingRuntime{Runtime: rt, at: time.Now().Add(d), log: log}, nil
}

// hangingRuntime hangs ListSandboxRefs, the relist's first call, once at
// has passed. It implements runtime.RefLister so that until then the
// relist takes the same path as without the hook; the runtime's other
// optional interfaces are hidden (a test-only wrapper).
type hangingRuntime struct {
	runtime.Runtime
	at  time.Time
	log *slog.Logger
}

var _ runtime.RefLister = (*hangingRuntime)(nil)

func (h *hangingRuntime) ListSandboxRefs(ctx context.Context, labels map[string]string, key string, into []runtime.SandboxRef) ([]runtime.SandboxRef, error) {
	if time.Now().After(h.at) {
		h.log.Warn("test hook: the relist hangs until skiff stops", "env", hangSyncEnv)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return runtime.ListSandboxRefs(ctx, h.Runtime, labels, key, into)
}

func (h *hangingRuntime) ListContainerRefs(ctx context.Context, labels map[string]string, key string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	return runtime.ListContainerRefs(ctx, h.Runtime, labels, key, into)
}
