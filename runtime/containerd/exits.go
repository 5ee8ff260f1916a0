package containerd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/typeurl/v2"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/runtime"

	"github.com/skiffnode/skiff/internal/supervisor"
)

var _ runtime.ExitWatcher = (*ExitWatcher)(nil)

// exitFilters select the exits of CRI's tasks: containers and sandboxes'
// pause containers (their task IDs are the CRI IDs).
var exitFilters = []string{`topic=="/tasks/exit",namespace==` + Namespace}

// Re-subscription back-off of the ExitWatcher: a stream that broke is
// subscribed again after exitRetryInitial, doubling to exitRetryMax while
// streams keep breaking within exitStableAfter.
const (
	exitRetryInitial = 100 * time.Millisecond
	exitRetryMax     = 5 * time.Second
	exitStableAfter  = 10 * time.Second
	// servingTimeout bounds waiting for containerd to answer before
	// subscribing.
	servingTimeout = 10 * time.Second
)

// eventSource is what the ExitWatcher needs of a containerd client.
type eventSource interface {
	IsServing(ctx context.Context) (bool, error)
	Subscribe(ctx context.Context, filters ...string) (<-chan *events.Envelope, <-chan error)
}

// ExitWatcher reports container exits from containerd's event service, so
// the agent learns of an exited container at once rather than at its next
// relist (containerd 1.6's CRI has no GetContainerEvents). Safe for
// concurrent use.
type ExitWatcher struct {
	client *containerd.Client // nil in tests
	events eventSource
	logger *slog.Logger
	clock  clock.Clock
}

// NewExitWatcher connects to containerd's gRPC socket at address (the CRI
// socket of a containerd, or Managed.Address). The caller must Close it.
// The connection outlives containerd restarts (gRPC reconnects).
func NewExitWatcher(address string, logger *slog.Logger) (*ExitWatcher, error) {
	client, err := newEventClient(address)
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ExitWatcher{client: client, events: client, logger: logger, clock: clock.RealClock{}}, nil
}

// eventWindow is the event connection's static HTTP/2 flow-control
// window. gRPC's default dynamic window makes the client answer nearly
// every message with a BDP-estimation PING and read its ack: an exit
// event for every exec probe (11 a second at 110 pods) cost a write, a
// read and their wake-ups more (issue 13; the CRI connection has the same
// fix, runtime/cri's criWindow). An event is a few hundred bytes.
const eventWindow = 1 << 20

// newEventClient connects the exit watcher's client: containerd.New's
// dial options plus eventDialOptions.
func newEventClient(address string) (*containerd.Client, error) {
	return containerd.New(address, containerd.WithDefaultNamespace(Namespace),
		containerd.WithExtraDialOpts(eventDialOptions()))
}

// eventDialOptions are what the event connection adds to containerd.New's
// dial options: static windows, and reconnect attempts at most 3 s apart
// while containerd restarts.
func eventDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: grpcbackoff.Config{
			BaseDelay: grpcbackoff.DefaultConfig.BaseDelay, Multiplier: grpcbackoff.DefaultConfig.Multiplier,
			Jitter: grpcbackoff.DefaultConfig.Jitter, MaxDelay: 3 * time.Second,
		}}),
		grpc.WithStaticStreamWindowSize(eventWindow),
		grpc.WithStaticConnWindowSize(eventWindow),
	}
}

// Close closes the connection to containerd.
func (w *ExitWatcher) Close() error { return w.client.Close() }

// WatchExits implements runtime.ExitWatcher: it blocks until ctx is done,
// calling fn with the task ID of every exit. When the stream breaks
// (containerd restarting) it waits until containerd answers and subscribes
// again, with back-off (exitRetryInitial doubling to exitRetryMax); once
// subscribed again it calls fn("") because exits during the gap were not
// reported: the agent lists the runtime at once.
func (w *ExitWatcher) WatchExits(ctx context.Context, fn func(id string)) error {
	b := supervisor.NewBackoff(supervisor.Policy{Initial: exitRetryInitial, Max: exitRetryMax, ResetAfter: exitStableAfter})
	resubscribe := false
	for {
		start := w.clock.Now()
		err := w.watchOnce(ctx, fn, resubscribe)
		if ctx.Err() != nil {
			return nil
		}
		if !resubscribe {
			w.logger.Warn("containerd exit events interrupted; subscribing again once containerd answers", "err", err)
		}
		resubscribe = true
		delay := b.Next(w.clock.Since(start))
		w.logger.Debug("containerd exit events interrupted", "err", err, "retryIn", delay)
		t := w.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// watchOnce waits (bounded) until containerd answers, subscribes, calls
// fn("") if resubscribed, and forwards exits until the stream breaks.
func (w *ExitWatcher) watchOnce(ctx context.Context, fn func(id string), resubscribed bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sctx, scancel := context.WithTimeout(ctx, servingTimeout)
	serving, err := w.events.IsServing(sctx)
	scancel()
	if err != nil {
		return fmt.Errorf("containerd not answering: %w", err)
	}
	if !serving {
		return fmt.Errorf("containerd not serving")
	}
	envs, errs := w.events.Subscribe(ctx, exitFilters...)
	if resubscribed {
		w.logger.Info("containerd exit events subscribed again; listing the runtime for exits missed meanwhile")
		fn("")
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case env := <-envs:
			if env == nil || env.Event == nil {
				continue
			}
			v, err := typeurl.UnmarshalAny(env.Event)
			if err != nil {
				w.logger.Debug("undecodable containerd event", "topic", env.Topic, "err", err)
				continue
			}
			// Exec'd processes (probes, hooks) exit with their own ID:
			// only a task's main process ends the container.
			if e, ok := v.(*apievents.TaskExit); ok && e.ContainerID != "" && e.ID == e.ContainerID {
				fn(e.ContainerID)
			}
		case err := <-errs:
			if err == nil {
				err = fmt.Errorf("event stream closed")
			}
			return err
		}
	}
}
