package scheme

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var t0 = time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)

// fullV1Event has every field of events.k8s.io/v1 Event set, so that a
// field the conversion forgets shows up as a difference.
func fullV1Event() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		EventTime:           metav1.NewMicroTime(t0),
		Series:              &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Second))},
		ReportingController: "skiff.io/test", ReportingInstance: "i", Action: "Act", Reason: "Why",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u", FieldPath: "spec"},
		Related:   &corev1.ObjectReference{Kind: "Node", Name: "n"},
		Note:      "note", Type: corev1.EventTypeWarning,
		DeprecatedSource:         corev1.EventSource{Component: "c", Host: "h"},
		DeprecatedFirstTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		DeprecatedLastTimestamp:  metav1.NewTime(t0.Add(-time.Minute)),
		DeprecatedCount:          7,
	}
}

// TestEventConversion: upstream's field mapping both ways, no field lost
// (every field of both types non-zero after a round trip), through the
// scheme as the API handlers call it.
func TestEventConversion(t *testing.T) {
	in := fullV1Event()
	internal, err := Scheme.ConvertToVersion(in.DeepCopy(), schema.GroupVersion{Group: eventsv1.GroupName, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatal(err)
	}
	core, ok := internal.(*corev1.Event)
	if !ok {
		t.Fatalf("internal events.k8s.io Event is %T, want *corev1.Event", internal)
	}
	want := corev1.Event{
		ObjectMeta:     in.ObjectMeta,
		InvolvedObject: in.Regarding,
		Reason:         "Why", Message: "note", Source: in.DeprecatedSource,
		FirstTimestamp: in.DeprecatedFirstTimestamp, LastTimestamp: in.DeprecatedLastTimestamp, Count: 7,
		Type: corev1.EventTypeWarning, EventTime: in.EventTime,
		Series: &corev1.EventSeries{Count: 3, LastObservedTime: in.Series.LastObservedTime},
		Action: "Act", Related: in.Related,
		ReportingController: "skiff.io/test", ReportingInstance: "i",
	}
	core.TypeMeta = metav1.TypeMeta{}
	if !apiequality.Semantic.DeepEqual(*core, want) {
		t.Errorf("to core:\n%+v\nwant\n%+v", *core, want)
	}
	checkAllSet(t, reflect.ValueOf(*core), "corev1.Event")

	back, err := Scheme.ConvertToVersion(core, eventsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	out, ok := back.(*eventsv1.Event)
	if !ok {
		t.Fatalf("events.k8s.io/v1 is %T", back)
	}
	if out.APIVersion != "events.k8s.io/v1" || out.Kind != "Event" {
		t.Errorf("type meta %+v", out.TypeMeta)
	}
	out.TypeMeta = metav1.TypeMeta{}
	if !apiequality.Semantic.DeepEqual(out, in) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", out, in)
	}
	checkAllSet(t, reflect.ValueOf(*out), "eventsv1.Event")

	// The conversion copies: the converted object shares no pointer.
	out.Related.Name, out.Labels["a"] = "changed", "changed"
	if core.Related.Name != "n" || core.Labels["a"] != "b" {
		t.Error("conversion shares pointers with its input")
	}
}

// TestEventListConversion: lists convert item by item, list metadata kept.
func TestEventListConversion(t *testing.T) {
	in := &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}, Items: []corev1.Event{{Message: "a"}, {Message: "b"}}}
	got, err := Scheme.ConvertToVersion(in, eventsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	list := got.(*eventsv1.EventList)
	if list.ResourceVersion != "12" || len(list.Items) != 2 || list.Items[1].Note != "b" {
		t.Errorf("list: %+v", list)
	}
}

// TestEventsFieldLabels: events.k8s.io/v1 labels map to the core keys the
// Store matches; core-only labels are refused (upstream's mapping).
func TestEventsFieldLabels(t *testing.T) {
	gvk := eventsv1.SchemeGroupVersion.WithKind("Event")
	for label, want := range map[string]string{
		"regarding.name":      "involvedObject.name",
		"regarding.uid":       "involvedObject.uid",
		"reportingController": "reportingComponent",
		"reason":              "reason",
		"type":                "type",
		"metadata.name":       "metadata.name",
		"source":              "",
		"involvedObject.name": "",
		"note":                "",
	} {
		got, _, err := Scheme.ConvertFieldLabel(gvk, label, "v")
		if want == "" {
			if err == nil {
				t.Errorf("%s: accepted as %q, want refused", label, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", label, got, err, want)
		}
	}
}

// checkAllSet fails for every zero-valued exported field of v (TypeMeta
// excepted), top level only.
func checkAllSet(t *testing.T, v reflect.Value, what string) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && f.Name != "TypeMeta" && v.Field(i).IsZero() {
			t.Errorf("%s.%s is zero after conversion", what, f.Name)
		}
	}
}
