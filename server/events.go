package server

import (
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// EventProvider gives the server the events it reports.
type EventProvider interface {
	// Events returns the recent events of this node's pods, oldest first.
	// Safe for concurrent use. The events are snapshots: neither the
	// provider nor the caller mutates them after the call.
	Events() []v1.Event
}

// handleEvents serves GET /events: a v1.EventList of the provider's events,
// in its order (oldest first). The optional fieldSelector query parameter
// filters them with the API server's syntax and keys, e.g.
// "involvedObject.namespace=default,involvedObject.name=web"; operators =,
// == and != are supported. An unknown key or a malformed selector is a 400.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	sel, err := parseEventSelector(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, s.log, eventList(s.events.Events(), sel))
}

// parseEventSelector parses a field selector over the keys of eventFields;
// "" selects everything.
func parseEventSelector(s string) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid fieldSelector %q: %v", s, err)
	}
	known := eventFields(&v1.Event{})
	for _, req := range sel.Requirements() {
		if _, ok := known[req.Field]; !ok {
			return nil, errorf(http.StatusBadRequest, "field label not supported: %s", req.Field)
		}
	}
	return sel, nil
}

// eventFields are the selectable fields of ev: the keys and values the API
// server supports for core/v1 events (pkg/registry/core/event; "source"
// falls back to the reporting controller).
func eventFields(ev *v1.Event) fields.Set {
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	o := ev.InvolvedObject
	return fields.Set{
		"metadata.name":                  ev.Name,
		"metadata.namespace":             ev.Namespace,
		"involvedObject.kind":            o.Kind,
		"involvedObject.namespace":       o.Namespace,
		"involvedObject.name":            o.Name,
		"involvedObject.uid":             string(o.UID),
		"involvedObject.apiVersion":      o.APIVersion,
		"involvedObject.resourceVersion": o.ResourceVersion,
		"involvedObject.fieldPath":       o.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}

// eventList builds the response of /events from the events sel matches.
func eventList(events []v1.Event, sel fields.Selector) *v1.EventList {
	items := make([]v1.Event, 0, len(events))
	for i := range events {
		if sel.Empty() || sel.Matches(eventFields(&events[i])) {
			items = append(items, events[i])
		}
	}
	return &v1.EventList{
		TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"},
		Items:    items,
	}
}

// PodEventSelector returns the fieldSelector for the events about one pod
// (any of its containers included), as kubectl describe builds it: by
// namespace, name and, when known, UID, so that the events of an earlier pod
// with the same name are left out.
func PodEventSelector(namespace, name string, uid types.UID) string {
	terms := []string{
		"involvedObject.name=" + fields.EscapeValue(name),
		"involvedObject.namespace=" + fields.EscapeValue(namespace),
	}
	if uid != "" {
		terms = append(terms, "involvedObject.uid="+fields.EscapeValue(string(uid)))
	}
	return strings.Join(terms, ",")
}

type noEvents struct{}

func (noEvents) Events() []v1.Event { return nil }
