package apisource

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EventAPI is the API server as the event sink uses it.
type EventAPI interface {
	CreateEvent(ctx context.Context, ev *v1.Event) (*v1.Event, error)
	PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*v1.Event, error)
}

// eventQueueSize bounds the events waiting to be sent; beyond it they are
// dropped, as client-go's broadcaster drops them (its queue is 1000).
const eventQueueSize = 1000

// EventSink posts the agent's events to the API server: a new event is
// created, a repeat patches its count and last timestamp (client-go's
// event correlator's aggregation). The local /events keep every event
// either way. Create with NewEventSink; Record is the agent's
// EventRecorder.Forward function.
type EventSink struct {
	api EventAPI
	log *slog.Logger
	ch  chan queuedEvent

	mu      sync.Mutex
	dropped int
}

type queuedEvent struct {
	ev     *v1.Event
	repeat bool
}

// NewEventSink returns a sink posting through api.
func NewEventSink(api EventAPI, log *slog.Logger) *EventSink {
	return &EventSink{api: api, log: log, ch: make(chan queuedEvent, eventQueueSize)}
}

// Record queues ev (a repeat when repeat). Non-blocking; safe for
// concurrent use.
func (s *EventSink) Record(ev *v1.Event, repeat bool) {
	select {
	case s.ch <- queuedEvent{ev, repeat}:
	default:
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
	}
}

// Run sends queued events until ctx is done. Blocking.
func (s *EventSink) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-s.ch:
			s.send(ctx, q)
		}
		s.mu.Lock()
		dropped := s.dropped
		s.dropped = 0
		s.mu.Unlock()
		if dropped > 0 {
			s.log.Warn("events not posted: the queue was full", "dropped", dropped)
		}
	}
}

func (s *EventSink) send(ctx context.Context, q queuedEvent) {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	ev := q.ev
	if q.repeat {
		patch, _ := json.Marshal(map[string]any{"count": ev.Count, "lastTimestamp": ev.LastTimestamp, "message": ev.Message})
		_, err := s.api.PatchEvent(ctx, ev.Namespace, ev.Name, patch)
		if err == nil || !apierrors.IsNotFound(err) {
			s.logErr(ctx, ev, err)
			return
		}
		// Expired in the API server (its --event-ttl): create it anew.
	}
	ev.ResourceVersion = ""
	_, err := s.api.CreateEvent(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	s.logErr(ctx, ev, err)
}

func (s *EventSink) logErr(ctx context.Context, ev *v1.Event, err error) {
	if err != nil && ctx.Err() == nil {
		s.log.Warn("posting event", "reason", ev.Reason, "object", ev.InvolvedObject.Name, "err", err)
	}
}
