package apisource

import (
	"context"
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
