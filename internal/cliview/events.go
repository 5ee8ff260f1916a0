package cliview

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
)

// EventTableOptions select the columns of PrintEvents.
type EventTableOptions struct {
	// AllNamespaces adds a leading NAMESPACE column.
	AllNamespaces bool
	// Wide adds the SUBOBJECT, SOURCE, FIRST SEEN, COUNT and NAME columns of
	// `kubectl get events -o wide`.
	Wide bool
}

// PrintEvents writes events as the `kubectl events` table, oldest first
// (by the time of their last occurrence; ties keep the given order):
//
//	[NAMESPACE]   LAST SEEN   TYPE   REASON   OBJECT   [SUBOBJECT   SOURCE]   MESSAGE   [FIRST SEEN   COUNT   NAME]
//
// LAST SEEN is the age of the first occurrence, or for a repeated event
// kubectl's "10s (x3 over 2m)"; OBJECT is Kind/name. Ages are measured
// against now. With no events it writes nothing: kubectl's "No events
// found" message is for the caller, on stderr. events is not modified. Safe
// for concurrent use.
func PrintEvents(w io.Writer, events []v1.Event, opts EventTableOptions, now time.Time) error {
	if len(events) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, tabwriterMinWidth, tabwriterWidth, tabwriterPadding, tabwriterPadChar, 0)
	header := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
	if opts.Wide {
		header = []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"}
	}
	if opts.AllNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if _, err := fmt.Fprintln(tw, strings.Join(header, "\t")); err != nil {
		return fmt.Errorf("write event table: %w", err)
	}
	for _, e := range sortedEvents(events) {
		row := eventRow(&e, opts, now)
		if _, err := fmt.Fprintln(tw, terminalEscaper.Replace(strings.Join(row, "\t"))); err != nil {
			return fmt.Errorf("write event table: %w", err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write event table: %w", err)
	}
	return nil
}

// eventRow returns the cells of one event's row.
func eventRow(e *v1.Event, opts EventTableOptions, now time.Time) []string {
	object := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
	message := oneLine(strings.TrimSpace(e.Message))
	var row []string
	if opts.AllNamespaces {
		row = append(row, e.Namespace)
	}
	if !opts.Wide {
		return append(row, eventAge(e, now), e.Type, e.Reason, object, message)
	}
	return append(row, lastSeen(e, now), e.Type, e.Reason, object,
		e.InvolvedObject.FieldPath, eventSourceInstance(e), message,
		firstSeen(e, now), strconv.Itoa(int(eventCount(e))), e.Name)
}

// eventAge is kubectl's interval column of an event: the age of its first
// occurrence, with " (xN over AGE)" style for repeats: "5s (x3 over 2m)"
// reads "last seen 5s ago, 3 times over the last 2m".
func eventAge(e *v1.Event, now time.Time) string {
	first := firstSeen(e, now)
	switch {
	case e.Series != nil:
		return fmt.Sprintf("%s (x%d over %s)", since(e.Series.LastObservedTime.Time, now), e.Series.Count, first)
	case e.Count > 1:
		return fmt.Sprintf("%s (x%d over %s)", since(e.LastTimestamp.Time, now), e.Count, first)
	}
	return first
}

// firstSeen is the age of the event's first occurrence.
func firstSeen(e *v1.Event, now time.Time) string {
	if !e.EventTime.IsZero() {
		return since(e.EventTime.Time, now)
	}
	return since(e.FirstTimestamp.Time, now)
}

// lastSeen is the age of the event's last occurrence, as `kubectl get
// events` computes it.
func lastSeen(e *v1.Event, now time.Time) string {
	switch {
	case e.Series != nil:
		return since(e.Series.LastObservedTime.Time, now)
	case !e.LastTimestamp.IsZero():
		return since(e.LastTimestamp.Time, now)
	}
	return firstSeen(e, now)
}

// eventCount is how often the event happened (at least 1).
func eventCount(e *v1.Event) int32 {
	switch {
	case e.Series != nil:
		return e.Series.Count
	case e.Count == 0:
		return 1
	}
	return e.Count
}

// eventSource is the From column of kubectl describe.
func eventSource(e *v1.Event) string {
	if e.Source.Component != "" {
		return e.Source.Component
	}
	return e.ReportingController
}

// eventSourceInstance is the SOURCE column of `kubectl get events -o
// wide`: "component, host".
func eventSourceInstance(e *v1.Event) string {
	host := e.Source.Host
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return eventSource(e)
	}
	return eventSource(e) + ", " + host
}

// eventTime is the time an event sorts by: its last occurrence.
func eventTime(e *v1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// sortedEvents returns a copy of events, oldest (by eventTime) first; ties
// keep their order.
func sortedEvents(events []v1.Event) []v1.Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b v1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	return out
}

// oneLine keeps a table row on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
