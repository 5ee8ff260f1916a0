package core

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var t0 = time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)

// modern is a valid event as the events.k8s.io API stores it.
func modern(ns string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"},
		EventTime:      metav1.NewMicroTime(t0), ReportingController: "skiff.io/kubelet", ReportingInstance: "node-a",
		Action: "Start", Reason: "Started", Type: corev1.EventTypeNormal}
}

func paths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestValidateEvent: upstream's legacy rules, which every event passes
// whatever API writes it.
func TestValidateEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ev     func() *corev1.Event
		fields []string
	}{
		{"old style", func() *corev1.Event {
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Namespace: "ns"}}
		}, nil},
		{"old style, other namespace", func() *corev1.Event {
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Namespace: "other"}}
		}, []string{"involvedObject.namespace"}},
		{"old style, node event in default", func() *corev1.Event {
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}}
		}, nil},
		{"old style, node event elsewhere", func() *corev1.Event {
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}}
		}, []string{"involvedObject.namespace"}},
		{"modern", func() *corev1.Event { return modern("ns") }, nil},
		{"modern, other namespace", func() *corev1.Event {
			e := modern("ns")
			e.InvolvedObject.Namespace = "other"
			return e
		}, nil},
		{"modern, node event in kube-system", func() *corev1.Event {
			e := modern("kube-system")
			e.InvolvedObject.Namespace = ""
			return e
		}, nil},
		{"modern, node event elsewhere", func() *corev1.Event {
			e := modern("ns")
			e.InvolvedObject.Namespace = ""
			return e
		}, []string{"involvedObject.namespace"}},
		{"modern, empty", func() *corev1.Event {
			e := modern("ns")
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
			return e
		}, []string{"action", "reason", "reportingController", "reportingInstance"}},
		{"modern, too long", func() *corev1.Event {
			e := modern("ns")
			e.ReportingInstance, e.Action, e.Reason = strings.Repeat("i", 129), strings.Repeat("a", 129), strings.Repeat("r", 129)
			e.Message = strings.Repeat("m", 1025)
			return e
		}, []string{"action", "message", "reason", "reportingInstance"}},
		{"modern, at the limits", func() *corev1.Event {
			e := modern("ns")
			e.ReportingInstance, e.Action, e.Reason = strings.Repeat("i", 128), strings.Repeat("a", 128), strings.Repeat("r", 128)
			e.Message = strings.Repeat("m", 1024)
			return e
		}, nil},
	} {
		if got := paths(validateEvent(tc.ev())); !slices.Equal(got, tc.fields) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.fields)
		}
	}
}

// TestValidateEventV1: events.k8s.io's create and update rules.
func TestValidateEventV1(t *testing.T) {
	e := modern("ns")
	if errs := validateEventV1Create(e); len(errs) != 0 {
		t.Errorf("valid create: %v", errs)
	}
	e.Type, e.Count, e.EventTime = "Info", 2, metav1.MicroTime{}
	e.Series = &corev1.EventSeries{Count: 1}
	want := []string{"count", "eventTime", "series.count", "series.lastObservedTime", "type"}
	if got := paths(validateEventV1Create(e)); !slices.Equal(got, want) {
		t.Errorf("create: %v, want %v", got, want)
	}

	old := modern("ns")
	old.Count, old.Source.Component = 3, "kubelet" // written through core/v1
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"a": "b"}
	upd.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t0)}
	if errs := validateEventV1Update(upd, old); len(errs) != 0 {
		t.Errorf("series and labels update: %v", errs)
	}
	upd.Message, upd.InvolvedObject.Name, upd.Series.Count = "new", "q", 1
	want = []string{"involvedObject", "message", "series.count"}
	if got := paths(validateEventV1Update(upd, old)); !slices.Equal(got, want) {
		t.Errorf("update: %v, want %v", got, want)
	}
}
