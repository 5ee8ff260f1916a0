package containerd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	containerd "github.com/containerd/containerd"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"

	"github.com/skiffnode/skiff/runtime"
)

var _ runtime.ExitWatcher = (*ExitWatcher)(nil)

// exitFilters select the exits of CRI's tasks: containers and sandboxes'
// pause containers (their task IDs are the CRI IDs).
var exitFilters = []string{`topic=="/tasks/exit",namespace==` + Namespace}

// ExitWatcher reports container exits from containerd's event service, so
// the agent learns of an exited container at once rather than at its next
// relist (containerd 1.6's CRI has no GetContainerEvents). Safe for
// concurrent use.
type ExitWatcher struct {
	client *containerd.Client
	logger *slog.Logger
	// retry is the pause before re-subscribing after the stream broke.
	retry time.Duration
}

// NewExitWatcher connects to containerd's gRPC socket at address (the CRI
// socket of a containerd, or Managed.Address). The caller must Close it.
func NewExitWatcher(address string, logger *slog.Logger) (*ExitWatcher, error) {
	client, err := containerd.New(address, containerd.WithDefaultNamespace(Namespace))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ExitWatcher{client: client, logger: logger, retry: time.Second}, nil
}

// Close closes the connection to containerd.
func (w *ExitWatcher) Close() error { return w.client.Close() }

// WatchExits implements runtime.ExitWatcher: it blocks until ctx is done,
// calling fn with the task ID of every exit, and subscribes again after a
// broken stream (containerd restarting). Exits during a gap are only seen
// by the agent's relist, as without a watcher.
func (w *ExitWatcher) WatchExits(ctx context.Context, fn func(id string)) error {
	for {
		err := w.watchOnce(ctx, fn)
		if ctx.Err() != nil {
			return nil
		}
		w.logger.Debug("containerd exit events interrupted; subscribing again", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.retry):
		}
	}
}

func (w *ExitWatcher) watchOnce(ctx context.Context, fn func(id string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	envs, errs := w.client.Subscribe(ctx, exitFilters...)
	for {
		select {
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
