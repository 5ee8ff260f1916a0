// Package events keeps the recent events of a node and its pods in
// memory, as the kubelet's event recorder would post them: repeats are
// counted, not stored again, and events expire after an hour or once more
// than a thousand are kept.
package events

import (
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

const (
	// eventsMax bounds the events kept in memory; the oldest go first.
	eventsMax = 1000
	// eventTTL is how long an event is kept after it last happened, like
	// the API server's default --event-ttl.
	eventTTL = time.Hour
	// eventComponent is the source component of skiff's events.
	eventComponent = "skiff"
)

// eventKey identifies repeats of one event, which are counted instead of
// stored again (as the client-go event correlator does).
type eventKey struct {
	uid                         types.UID
	fieldPath, typ, reason, msg string
}

// Recorder keeps the recent events of this node's pods in memory.
// Safe for concurrent use.
type Recorder struct {
	clock clock.PassiveClock
	node  string

	mu     sync.Mutex
	seq    uint64
	events map[eventKey]*v1.Event
	// forward: see Forward.
	forward func(ev *v1.Event, repeat bool)
}

// Forward makes the recorder hand a copy of every event it records to fn
// too (e.g. to post it to an API server), with repeat set when it is a
// repeat of a kept event (same name, higher count). fn is called with the
// recorder's lock held: it must not block or call the recorder. Safe for
// concurrent use.
func (r *Recorder) Forward(fn func(ev *v1.Event, repeat bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forward = fn
}

// NewRecorder returns a recorder stamping events with c's time (nil:
// the real clock) and node as their source host.
func NewRecorder(c clock.PassiveClock, node string) *Recorder {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Recorder{clock: c, node: node, events: map[eventKey]*v1.Event{}}
}

// ContainerEvent records an event about container of pod, e.g. a probe's
// Unhealthy event. Safe for concurrent use; never blocks for long.
func (r *Recorder) ContainerEvent(pod *v1.Pod, container, typ, reason, msg string) {
	r.record(pod, containerFieldPath(pod, container), typ, reason, msg)
}

// PodEvent records an event about pod itself (no field path). Safe for
// concurrent use; never blocks for long.
func (r *Recorder) PodEvent(pod *v1.Pod, typ, reason, msg string) {
	r.record(pod, "", typ, reason, msg)
}

// containerFieldPath is the involvedObject.fieldPath of a container:
// spec.containers{name} or spec.initContainers{name}.
func containerFieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}

// record adds an event about pod (fieldPath "" for the pod itself, else
// containerFieldPath). Repeats increase the count of the stored event.
func (r *Recorder) record(pod *v1.Pod, fieldPath, typ, reason, msg string) {
	r.recordObject(v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, FieldPath: fieldPath,
	}, typ, reason, msg)
}

// NodeEvent records an event about this node, as the kubelet records
// image GC failures on its node reference (kind Node, name and UID the
// node name, no namespace). Safe for concurrent use; never blocks for
// long.
func (r *Recorder) NodeEvent(typ, reason, msg string) {
	r.recordObject(v1.ObjectReference{Kind: "Node", Name: r.node, UID: types.UID(r.node)}, typ, reason, msg)
}

// recordObject adds an event about obj; repeats increase the count of the
// stored event.
func (r *Recorder) recordObject(obj v1.ObjectReference, typ, reason, msg string) {
	now := metav1.NewTime(r.clock.Now())
	k := eventKey{uid: obj.UID, fieldPath: obj.FieldPath, typ: typ, reason: reason, msg: msg}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev, ok := r.events[k]; ok {
		ev.Count++
		ev.LastTimestamp = now
		if r.forward != nil {
			r.forward(ev.DeepCopy(), true)
		}
		return
	}
	r.seq++
	// Events about cluster-scoped objects live in "default", as
	// client-go's recorder puts them.
	ns := obj.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	r.events[k] = &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s.%x%04x", obj.Name, now.UnixNano(), r.seq&0xffff),
			Namespace:         ns,
			CreationTimestamp: now,
		},
		InvolvedObject: obj,
		Reason:         reason, Message: msg, Type: typ, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              v1.EventSource{Component: eventComponent, Host: r.node},
		ReportingController: eventComponent, ReportingInstance: r.node,
	}
	if r.forward != nil {
		r.forward(r.events[k].DeepCopy(), false)
	}
	r.pruneLocked()
}

// pruneLocked drops expired events and, over eventsMax, the oldest ones.
func (r *Recorder) pruneLocked() {
	cutoff := r.clock.Now().Add(-eventTTL)
	for k, ev := range r.events {
		if ev.LastTimestamp.Time.Before(cutoff) {
			delete(r.events, k)
		}
	}
	if len(r.events) <= eventsMax {
		return
	}
	keys := make([]eventKey, 0, len(r.events))
	for k := range r.events {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return r.events[keys[i]].LastTimestamp.Before(&r.events[keys[j]].LastTimestamp)
	})
	for _, k := range keys[:len(keys)-eventsMax] {
		delete(r.events, k)
	}
}

// List returns copies of the kept events, oldest first. Safe for
// concurrent use.
func (r *Recorder) List() []v1.Event {
	r.mu.Lock()
	r.pruneLocked()
	out := make([]v1.Event, 0, len(r.events))
	for _, ev := range r.events {
		out = append(out, *ev.DeepCopy())
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastTimestamp.Equal(&out[j].LastTimestamp) {
			return out[i].LastTimestamp.Before(&out[j].LastTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out
}
