package events

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func TestEventRecorderCountsRepeats(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := NewRecorder(clk, "node")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "a"}}},
	}
	r.ContainerEvent(pod, "a", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container a")
	clk.Step(time.Minute)
	r.ContainerEvent(pod, "a", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container a")
	r.PodEvent(pod, v1.EventTypeNormal, "DeadlineExceeded", "deadline")
	evs := r.List()
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2", len(evs))
	}
	if evs[0].Count != 2 || !evs[0].LastTimestamp.Time.Equal(t0.Add(time.Minute)) || evs[0].InvolvedObject.FieldPath != "spec.containers{a}" {
		t.Errorf("repeated event = %+v", evs[0])
	}
	clk.Step(2 * time.Hour)
	if n := len(r.List()); n != 0 {
		t.Errorf("after the TTL %d events remain", n)
	}
}

// TestRecorderInvolvedObjects: each kind of event names its object as the
// kubelet's do: a container by its field path (init containers apart), the
// pod with none, the node by name in "default".
func TestRecorderInvolvedObjects(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid1"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "app"}},
		},
	}
	for _, tc := range []struct {
		name   string
		record func(r *Recorder)
		want   v1.ObjectReference
		wantNS string
	}{
		{"container", func(r *Recorder) { r.ContainerEvent(pod, "app", v1.EventTypeNormal, "Started", "m") },
			v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "uid1", FieldPath: "spec.containers{app}"}, "ns"},
		{"init container", func(r *Recorder) { r.ContainerEvent(pod, "init", v1.EventTypeNormal, "Started", "m") },
			v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "uid1", FieldPath: "spec.initContainers{init}"}, "ns"},
		{"pod", func(r *Recorder) { r.PodEvent(pod, v1.EventTypeNormal, "DeadlineExceeded", "m") },
			v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "uid1"}, "ns"},
		{"node", func(r *Recorder) { r.NodeEvent(v1.EventTypeWarning, "ContainerGCFailed", "m") },
			v1.ObjectReference{Kind: "Node", Name: "node", UID: "node"}, metav1.NamespaceDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder(clocktesting.NewFakeClock(t0), "node")
			tc.record(r)
			evs := r.List()
			if len(evs) != 1 {
				t.Fatalf("got %d events, want 1", len(evs))
			}
			if evs[0].InvolvedObject != tc.want || evs[0].Namespace != tc.wantNS || evs[0].Source.Host != "node" {
				t.Errorf("event = %+v, want involved object %+v in %q", evs[0], tc.want, tc.wantNS)
			}
		})
	}
}
