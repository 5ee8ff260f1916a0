package apisource

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EventAPI is the API server as the event sink uses it.
type EventAPI interface {
	CreateEvent(ctx context.Context, ev *v1.Event) (*v1.Event, error)
	PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*v1.Event, error)
}

// eventQueueSize bounds the events waiting to be sent, and those held
// while the API server does not answer; beyond it they are dropped (the
// oldest held ones first), as client-go's broadcaster drops them (its
// queue is 1000).
const eventQueueSize = 1000

// eventRetryInterval is how often held events are tried again, client-go's
// sleep between an event's tries.
const eventRetryInterval = 10 * time.Second

// EventSink posts the agent's events to the API server: a new event is
// created, a repeat patches its count and last timestamp (client-go's
// event correlator's aggregation). The local /events keep every event
// either way. An event the API server could not be reached for is held,
// in order with those after it, and sent when it answers again (client-go
// gives up on one after 12 tries; a node running from its offline copy
// sends what happened meanwhile). Create with NewEventSink; Record is the
// agent's EventRecorder.Forward function.
type EventSink struct {
	api EventAPI
	log *slog.Logger
	ch  chan queuedEvent

	mu      sync.Mutex
	dropped int

	// held are the events not sent for want of the API server, oldest
	// first (Run's goroutine only).
	held []queuedEvent
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

// Run sends queued events until ctx is done, and the held ones every
// eventRetryInterval. Blocking.
func (s *EventSink) Run(ctx context.Context) {
	t := time.NewTicker(eventRetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-s.ch:
			s.sendOrHold(ctx, q)
		case <-t.C:
			s.retry(ctx)
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

// sendOrHold sends q, or holds it behind the events already held.
func (s *EventSink) sendOrHold(ctx context.Context, q queuedEvent) {
	if len(s.held) == 0 && s.send(ctx, q) {
		return
	}
	if ctx.Err() != nil {
		return
	}
	if len(s.held) == 0 {
		s.log.Warn("the API server does not answer: events are held until it does", "reason", q.ev.Reason, "object", q.ev.InvolvedObject.Name)
	}
	if len(s.held) == eventQueueSize {
		s.held = s.held[1:]
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
	}
	s.held = append(s.held, q)
}

// retry sends the held events in order, up to the first that fails again.
func (s *EventSink) retry(ctx context.Context) {
	n := 0
	for n < len(s.held) && s.send(ctx, s.held[n]) {
		n++
	}
	if n > 0 {
		s.held = slices.Delete(s.held, 0, n)
		s.log.Info("held events posted", "posted", n, "held", len(s.held))
	}
}

// send posts q; false when the API server could not be reached (an error
// without an API status), so q is to be held. An error the API server
// answered with is logged and q dropped.
func (s *EventSink) send(ctx context.Context, q queuedEvent) bool {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	ev := q.ev
	if q.repeat {
		patch, _ := json.Marshal(map[string]any{"count": ev.Count, "lastTimestamp": ev.LastTimestamp, "message": ev.Message})
		_, err := s.api.PatchEvent(ctx, ev.Namespace, ev.Name, patch)
		if err == nil || !apierrors.IsNotFound(err) {
			return s.checkErr(ev, err)
		}
		// Expired in the API server (its --event-ttl): create it anew.
	}
	ev.ResourceVersion = ""
	_, err := s.api.CreateEvent(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	return s.checkErr(ev, err)
}

// checkErr logs an error the API server answered with and reports
// whether the event is done with (sent or refused).
func (s *EventSink) checkErr(ev *v1.Event, err error) bool {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return true
	case !errors.As(err, &status):
		return false
	}
	s.log.Warn("posting event", "reason", ev.Reason, "object", ev.InvolvedObject.Name, "err", err)
	return true
}
