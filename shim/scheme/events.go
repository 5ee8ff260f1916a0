package scheme

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// events.k8s.io/v1 Events and core/v1 Events are one stored object, as in
// kube-apiserver 1.34: upstream's internal events.k8s.io group holds the
// internal core.Event (pkg/apis/events/register.go), both APIs convert
// to and from it, and the storage factory keeps both resources under
// /registry/events in core/v1 encoding (cohabitating resources,
// pkg/kubeapiserver/default_storage_factory_builder.go). The shim's
// internal core Event is corev1.Event, so events.k8s.io's internal twin is
// corev1.Event too, and the conversions below are upstream's
// pkg/apis/events/v1/conversion.go between the two k8s.io/api types.

// addEventsInternal registers corev1.Event and corev1.EventList as the
// internal kinds of gv (events.k8s.io) with upstream's conversions to and
// from gv's own Event and EventList.
func addEventsInternal(s *runtime.Scheme, gv schema.GroupVersion) error {
	internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
	s.AddKnownTypeWithName(internal.WithKind("Event"), &corev1.Event{})
	s.AddKnownTypeWithName(internal.WithKind("EventList"), &corev1.EventList{})
	convs := []struct {
		a, b any
		fn   conversion.ConversionFunc
	}{
		{&eventsv1.Event{}, &corev1.Event{}, func(a, b any, _ conversion.Scope) error {
			eventToCore(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}},
		{&corev1.Event{}, &eventsv1.Event{}, func(a, b any, _ conversion.Scope) error {
			eventFromCore(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}},
		{&eventsv1.EventList{}, &corev1.EventList{}, func(a, b any, _ conversion.Scope) error {
			in, out := a.(*eventsv1.EventList), b.(*corev1.EventList)
			out.ListMeta = *in.ListMeta.DeepCopy()
			out.Items = make([]corev1.Event, len(in.Items))
			for i := range in.Items {
				eventToCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
		{&corev1.EventList{}, &eventsv1.EventList{}, func(a, b any, _ conversion.Scope) error {
			in, out := a.(*corev1.EventList), b.(*eventsv1.EventList)
			out.ListMeta = *in.ListMeta.DeepCopy()
			out.Items = make([]eventsv1.Event, len(in.Items))
			for i := range in.Items {
				eventFromCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
	}
	for _, c := range convs {
		if err := s.AddConversionFunc(c.a, c.b, c.fn); err != nil {
			return fmt.Errorf("events.k8s.io conversion %T -> %T: %w", c.a, c.b, err)
		}
	}
	return nil
}

// eventToCore fills out (type meta left alone) from an events.k8s.io/v1
// Event: regarding -> involvedObject, note -> message, deprecatedSource
// -> source, deprecatedFirstTimestamp/LastTimestamp/Count ->
// firstTimestamp/lastTimestamp/count; the other fields have the same
// names (upstream's Convert_v1_Event_To_core_Event).
func eventToCore(in *eventsv1.Event, out *corev1.Event) {
	in = in.DeepCopy()
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Series = nil
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.InvolvedObject = in.Regarding
	out.Related = in.Related
	out.Message = in.Note
	out.Type = in.Type
	out.Source = in.DeprecatedSource
	out.FirstTimestamp = in.DeprecatedFirstTimestamp
	out.LastTimestamp = in.DeprecatedLastTimestamp
	out.Count = in.DeprecatedCount
}

// eventFromCore is eventToCore's inverse (upstream's
// Convert_core_Event_To_v1_Event).
func eventFromCore(in *corev1.Event, out *eventsv1.Event) {
	in = in.DeepCopy()
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Series = nil
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.Regarding = in.InvolvedObject
	out.Related = in.Related
	out.Note = in.Message
	out.Type = in.Type
	out.DeprecatedSource = in.Source
	out.DeprecatedFirstTimestamp = in.FirstTimestamp
	out.DeprecatedLastTimestamp = in.LastTimestamp
	out.DeprecatedCount = in.Count
}

// eventsV1FieldLabels maps events.k8s.io/v1 field selector labels to the
// keys the events' Store matches (core/v1 names), as upstream's
// AddFieldLabelConversionsForEvent; source is not selectable there.
var eventsV1FieldLabels = map[string]string{
	"reason":                    "reason",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
	"reportingController":       "reportingComponent",
	"type":                      "type",
	"metadata.namespace":        "metadata.namespace",
	"metadata.name":             "metadata.name",
}

func addEventsFieldLabelConversion(s *runtime.Scheme) error {
	return s.AddFieldLabelConversionFunc(eventsv1.SchemeGroupVersion.WithKind("Event"),
		func(label, value string) (string, string, error) {
			mapped, ok := eventsV1FieldLabels[label]
			if !ok {
				return "", "", fmt.Errorf("field label not supported: %s", label)
			}
			return mapped, value, nil
		})
}
