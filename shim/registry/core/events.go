package core

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/shim/printers"
	"github.com/skiffnode/skiff/shim/registry/generic"
)

// eventTTL is how long events live, as kube-apiserver's --event-ttl.
const eventTTL = 3600

// Upstream's limits (pkg/apis/core/validation/events.go).
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// Events (core/v1), kept for an hour; PUT may create (as upstream).
// Validation is upstream's for core/v1 requests: the legacy rules only.
var Events = &generic.Kind{
	Table:   printers.Events(),
	Version: "v1", Resource: "events", Singular: "event", Namespaced: true,
	New:                 func() runtime.Object { return &corev1.Event{} },
	NewList:             func() runtime.Object { return &corev1.EventList{} },
	ShortNames:          []string{"ev"},
	AllowCreateOnUpdate: true,
	TTL:                 eventTTL,
	Validate:            validateEvent,
	Fields:              eventFields,
}

// EventsV1 (events.k8s.io/v1) are the same stored objects as Events: the
// Store holds corev1.Events, which shim/scheme converts to and from
// eventsv1.Events at the API boundary, and the storage factory keeps both
// resources in /registry/events in core/v1 encoding (shim/server). Same
// table, TTL and selectable fields as Events (upstream serves both with one
// REST type); creates and updates get upstream's strict events.k8s.io
// validation on top of the legacy rules.
var EventsV1 = &generic.Kind{
	Table: printers.Events(),
	Group: eventsv1.GroupName, Version: "v1", Resource: "events", Singular: "event", Namespaced: true,
	New:                 func() runtime.Object { return &corev1.Event{} },
	NewList:             func() runtime.Object { return &corev1.EventList{} },
	ShortNames:          []string{"ev"},
	AllowCreateOnUpdate: true,
	TTL:                 eventTTL,
	Validate:            validateEvent,
	ValidateCreate:      validateEventV1Create,
	ValidateUpdate:      validateEventV1Update,
	Fields:              eventFields,
}

// validateEvent is upstream's legacyValidateEvent, which every event
// passes whatever API writes it. Field paths are the core/v1 names, as
// upstream reports them for both APIs (involvedObject, message). The
// namespace's own syntax is the generic strategy's metadata check.
func validateEvent(obj runtime.Object) field.ErrorList {
	ev := obj.(*corev1.Event)
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	involvedNS := ev.InvolvedObject.Namespace
	if ev.EventTime.IsZero() {
		// Old-style events: the namespaces agree, or the involved object is
		// cluster-scoped and the event is in "default" (old clients).
		if involvedNS == "" && ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault ||
			involvedNS != "" && involvedNS != ev.Namespace {
			errs = append(errs, field.Invalid(nsPath, involvedNS, "does not match event.namespace"))
		}
		return errs
	}
	if involvedNS == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(nsPath, involvedNS, "does not match event.namespace"))
	}
	controller := field.NewPath("reportingController")
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(controller, ""))
	}
	for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
		errs = append(errs, field.Invalid(controller, ev.ReportingController, msg))
	}
	errs = append(errs, requiredAtMost(field.NewPath("reportingInstance"), ev.ReportingInstance, reportingInstanceLengthLimit)...)
	errs = append(errs, requiredAtMost(field.NewPath("action"), ev.Action, actionLengthLimit)...)
	errs = append(errs, requiredAtMost(field.NewPath("reason"), ev.Reason, reasonLengthLimit)...)
	if len(ev.Message) > noteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	return errs
}

// requiredAtMost: value is set and has at most limit bytes.
func requiredAtMost(path *field.Path, value string, limit int) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if len(value) > limit {
		return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}

// validateEventV1Create is the strict part of upstream's
// ValidateEventCreate for events.k8s.io/v1: eventTime set, type Normal or
// Warning, a valid series, and none of the deprecated core fields.
func validateEventV1Create(obj runtime.Object) field.ErrorList {
	ev := obj.(*corev1.Event)
	errs := validateEventSeries(ev)
	if ev.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", ev.Type)))
	}
	unset := []struct {
		name string
		set  bool
	}{
		{"firstTimestamp", !ev.FirstTimestamp.IsZero()},
		{"lastTimestamp", !ev.LastTimestamp.IsZero()},
		{"count", ev.Count != 0},
		{"source", ev.Source.Component != "" || ev.Source.Host != ""},
	}
	for _, f := range unset {
		if f.set {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", "needs to be unset"))
		}
	}
	return errs
}

// validateEventV1Update is upstream's ValidateEventUpdate for
// events.k8s.io/v1 beyond the legacy rules: a changed series must be
// valid, and everything but the series and metadata is immutable.
func validateEventV1Update(obj, old runtime.Object) field.ErrorList {
	ev, was := obj.(*corev1.Event), old.(*corev1.Event)
	var errs field.ErrorList
	if !reflect.DeepEqual(ev.Series, was.Series) {
		errs = append(errs, validateEventSeries(ev)...)
	}
	immutable := []struct {
		name     string
		now, old any
	}{
		{"involvedObject", ev.InvolvedObject, was.InvolvedObject},
		{"reason", ev.Reason, was.Reason},
		{"message", ev.Message, was.Message},
		{"source", ev.Source, was.Source},
		{"firstTimestamp", ev.FirstTimestamp, was.FirstTimestamp},
		{"lastTimestamp", ev.LastTimestamp, was.LastTimestamp},
		{"count", ev.Count, was.Count},
		{"type", ev.Type, was.Type},
		{"eventTime", ev.EventTime, was.EventTime},
		{"action", ev.Action, was.Action},
		{"related", ev.Related, was.Related},
		{"reportingController", ev.ReportingController, was.ReportingController},
		{"reportingInstance", ev.ReportingInstance, was.ReportingInstance},
	}
	// Upstream checks reason twice (two identical errors); once here.
	for _, f := range immutable {
		errs = append(errs, apivalidation.ValidateImmutableField(f.now, f.old, field.NewPath(f.name))...)
	}
	return errs
}

// validateEventSeries: a series counts at least 2 and has its last
// observation time (upstream's validateV1EventSeries, same paths).
func validateEventSeries(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.Series == nil {
		return nil
	}
	if ev.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if ev.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// eventFields is upstream's event ToSelectableFields less metadata. The
// keys are core/v1's for both APIs; shim/scheme maps events.k8s.io/v1's
// labels (regarding.*, reportingController) onto them.
func eventFields(obj runtime.Object) fields.Set {
	ev := obj.(*corev1.Event)
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}
