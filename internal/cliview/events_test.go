package cliview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tableEvents are events of two pods in two namespaces, out of order.
func tableEvents() []v1.Event {
	ev := func(ns, pod, field, typ, reason, msg string, first, last time.Duration, count int32) v1.Event {
		return v1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: pod + ".17c0ffee", Namespace: ns},
			Type:       typ, Reason: reason, Message: msg, Count: count,
			FirstTimestamp: ago(first), LastTimestamp: ago(last),
			Source:              v1.EventSource{Component: "skiff", Host: "node-1"},
			ReportingController: "skiff", ReportingInstance: "node-1",
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: pod, Namespace: ns, FieldPath: field},
		}
	}
	return []v1.Event{
		ev("default", "web-node-1", "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container app", 5*time.Minute, 10*time.Second, 7),
		ev("default", "web-node-1", "spec.initContainers{init}", v1.EventTypeNormal, "Pulled", `Container image "busybox:1.36" already present on machine`, 6*time.Minute, 6*time.Minute, 1),
		ev("kube-system", "dns-node-1", "", v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed,\nit will be killed and re-created.", 3*time.Hour, 3*time.Hour, 0),
		ev("default", "web-node-1", "spec.containers{app}", v1.EventTypeNormal, "Started", "Started container app", 5*time.Minute+30*time.Second, 5*time.Minute+30*time.Second, 1),
	}
}

func TestPrintEventsGolden_A54(t *testing.T) {
	for _, tt := range []struct {
		golden string
		opts   EventTableOptions
	}{
		{"events.golden", EventTableOptions{}},
		{"events-wide.golden", EventTableOptions{Wide: true}},
		{"events-all-namespaces.golden", EventTableOptions{AllNamespaces: true}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			events := tableEvents()
			var buf bytes.Buffer
			if err := PrintEvents(&buf, events, tt.opts, describeNow); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.golden, buf.String())
			if events[0].Reason != "BackOff" {
				t.Error("PrintEvents reordered the caller's slice")
			}
		})
	}
}

func TestPrintEventsEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintEvents(&buf, nil, EventTableOptions{}, describeNow); err != nil || buf.Len() != 0 {
		t.Errorf("PrintEvents(no events) = %q, %v; want no output", buf.String(), err)
	}
}

func TestEventAge_A54(t *testing.T) {
	for _, tt := range []struct {
		name string
		ev   v1.Event
		want string
	}{
		{"single", v1.Event{FirstTimestamp: ago(90 * time.Second), LastTimestamp: ago(90 * time.Second), Count: 1}, "90s"},
		{"repeated", v1.Event{FirstTimestamp: ago(2 * time.Minute), LastTimestamp: ago(5 * time.Second), Count: 3}, "5s (x3 over 2m)"},
		{"series", v1.Event{EventTime: metav1.NewMicroTime(describeNow.Add(-time.Hour)),
			Series: &v1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(describeNow.Add(-time.Minute))}}, "60s (x4 over 60m)"},
		{"no timestamps", v1.Event{}, "<unknown>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventAge(&tt.ev, describeNow); got != tt.want {
				t.Errorf("eventAge = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrintEventsOldestFirst(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintEvents(&buf, tableEvents(), EventTableOptions{}, describeNow); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	order := []string{"SandboxChanged", "Pulled", "Started", "BackOff"}
	for i, reason := range order {
		if !strings.Contains(lines[i+1], reason) {
			t.Errorf("row %d = %q, want the %s event (oldest first)", i+1, lines[i+1], reason)
		}
	}
}
