package apisource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestEventSink_A54: a new event is created, a repeat patches its count,
// a repeat of an event the API server expired is created again, and a
// full queue drops events instead of blocking the agent.
func TestEventSink_A54(t *testing.T) {
	api := &fakeAPI{}
	s := NewEventSink(api, discard)
	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}, Reason: "Started", Count: 1}
	s.Record(ev, false)
	rep := ev.DeepCopy()
	rep.Count = 2
	s.Record(rep, true)
	s.Record(rep, true)
	api.fail("PatchEvent", nil)
	api.fail("PatchEvent", apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "web.1"))
	ctx := context.Background()
	for range 3 {
		s.send(ctx, <-s.ch)
	}
	calls := api.Calls()
	want := []string{"CreateEvent default/web.1 Started", "PatchEvent", "PatchEvent", "CreateEvent default/web.1 Started"}
	if len(calls) != len(want) {
		t.Fatalf("calls %q", calls)
	}
	for i := range want {
		if !strings.HasPrefix(calls[i], want[i]) {
			t.Errorf("call %d %q, want %q", i, calls[i], want[i])
		}
	}
	if !strings.Contains(calls[1], `"count":2`) {
		t.Errorf("repeat patch %q lacks the count", calls[1])
	}
	for range eventQueueSize + 5 {
		s.Record(ev, false)
	}
	if s.dropped != 5 || !slices.Equal(api.Calls(), calls) {
		t.Errorf("dropped %d, want 5", s.dropped)
	}
}

// TestEventSinkHoldsWhileOffline_Issue33: an event the API server could
// not be reached for is held, with every event after it, and they are
// posted in order once it answers; an event it refused is not held; at
// eventQueueSize held events the oldest is dropped.
func TestEventSinkHoldsWhileOffline_Issue33(t *testing.T) {
	api := &fakeAPI{}
	s := NewEventSink(api, discard)
	ctx := context.Background()
	ev := func(name string) queuedEvent {
		return queuedEvent{ev: &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Reason: "Started"}}
	}
	down := errors.New("dial tcp: connection refused")
	api.fail("CreateEvent", down)
	s.sendOrHold(ctx, ev("a"))
	s.sendOrHold(ctx, ev("b")) // behind a: not tried
	api.fail("CreateEvent", down)
	s.retry(ctx) // a fails again
	if len(s.held) != 2 {
		t.Fatalf("held %d events, want 2", len(s.held))
	}
	s.retry(ctx)
	want := []string{"CreateEvent default/a Started", "CreateEvent default/a Started", "CreateEvent default/a Started", "CreateEvent default/b Started"}
	if got := api.Calls(); !slices.Equal(got, want) || len(s.held) != 0 {
		t.Errorf("calls %q (held %d), want %q", got, len(s.held), want)
	}
	api.fail("CreateEvent", apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "c", down))
	s.sendOrHold(ctx, ev("c"))
	if len(s.held) != 0 {
		t.Error("an event the API server refused was held")
	}
	for i := range eventQueueSize + 1 {
		api.fail("CreateEvent", down)
		s.sendOrHold(ctx, ev(fmt.Sprint("e", i)))
	}
	if len(s.held) != eventQueueSize || s.held[0].ev.Name != "e1" || s.dropped != 1 {
		t.Errorf("held %d from %s, dropped %d; want %d from e1, 1 dropped", len(s.held), s.held[0].ev.Name, s.dropped, eventQueueSize)
	}
}
