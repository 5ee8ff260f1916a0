package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Events: LAST SEEN TYPE REASON OBJECT MESSAGE, wide SUBOBJECT SOURCE
// FIRST SEEN COUNT NAME (printers.go eventColumnDefinitions and
// printEvent; the server always fills the wide cells).
func Events() *Table {
	doc := corev1.Event{}.SwaggerDoc()
	return &Table{
		Columns: []metav1.TableColumnDefinition{
			column("Last Seen", "string", 0, doc["lastTimestamp"]),
			column("Type", "string", 0, doc["type"]),
			column("Reason", "string", 0, doc["reason"]),
			column("Object", "string", 0, doc["involvedObject"]),
			column("Subobject", "string", 1, corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
			column("Source", "string", 1, doc["source"]),
			column("Message", "string", 0, doc["message"]),
			column("First Seen", "string", 1, doc["firstTimestamp"]),
			column("Count", "integer", 1, doc["count"]),
			{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMeta["name"]},
		},
		Row: rowOf(eventRow),
	}
}

func eventRow(e *corev1.Event, now time.Time) []any {
	first := age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last, count = microAge(e.Series.LastObservedTime, now), e.Series.Count
	} else if count == 0 {
		count = 1 // singleton events of the events.k8s.io API have none
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath,
		eventSource(e), strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

// eventSource is "component, host", from the source or the reporting
// controller and instance.
func eventSource(e *corev1.Event) string {
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return fmt.Sprintf("%s, %s", component, host)
}

func microAge(ts metav1.MicroTime, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return humanDuration(now.Sub(ts.Time))
}
