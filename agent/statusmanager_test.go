package agent

import (
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

func statusPod(uid types.UID, namespace, name string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Namespace: namespace, Name: name},
		Status:     v1.PodStatus{Phase: phase},
	}
}

// TestStatusManagerPublishesTrackedPodsOnly: a pod is published only
// while it is tracked (its worker runs); every publish and the forget is
// told to changed; queries return sorted copies and the counts.
func TestStatusManagerPublishesTrackedPodsOnly(t *testing.T) {
	var changed []types.UID
	s := newStatusManager(func(uid types.UID) { changed = append(changed, uid) })
	s.publish(statusPod("u0", "ns", "untracked", v1.PodRunning))
	s.track("u1")
	s.track("u2")
	s.publish(statusPod("u1", "ns", "b", v1.PodRunning))
	s.publish(statusPod("u2", "ns", "a", v1.PodPending))
	if got := s.pods(); len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("pods = %v, want a and b in order", got)
	}
	if r, n := s.counts(); r != 1 || n != 2 {
		t.Errorf("counts = %d running of %d, want 1 of 2", r, n)
	}
	p, ok := s.pod("u1")
	if !ok || p.Name != "b" {
		t.Fatalf("pod(u1) = %v, %v", p, ok)
	}
	p.Name = "edited"
	if s.get("u1").Name != "b" {
		t.Error("pod returned the published object, not a copy")
	}
	s.forget("u1")
	s.publish(statusPod("u1", "ns", "b", v1.PodRunning)) // a late publish
	if _, ok := s.pod("u1"); ok {
		t.Error("a forgotten pod is published")
	}
	if want := []types.UID{"u1", "u2", "u1"}; !slices.Equal(changed, want) {
		t.Errorf("changed = %v, want %v", changed, want)
	}
}

// TestStatusManagerRunningContainerID: Exec's lookup by pod and container
// name in the published status.
func TestStatusManagerRunningContainerID(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	pod := statusPod("u1", "ns", "web", v1.PodRunning)
	pod.Spec.Containers = []v1.Container{{Name: "app"}, {Name: "side"}}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://c1", State: running},
		{Name: "side", ContainerID: "containerd://c2"},
	}
	s := newStatusManager(nil)
	s.track("u1")
	s.publish(pod)
	for _, tc := range []struct {
		name, pod, container string
		want                 string
		notFound, fails      bool
	}{
		{name: "running", pod: "web", container: "app", want: "c1"},
		{name: "not running", pod: "web", container: "side", fails: true},
		{name: "no name, two containers", pod: "web", fails: true},
		{name: "no such container", pod: "web", container: "x", notFound: true, fails: true},
		{name: "no such pod", pod: "db", container: "app", notFound: true, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := s.runningContainerID("ns", tc.pod, tc.container)
			if (err != nil) != tc.fails || errors.Is(err, runtime.ErrNotFound) != tc.notFound || id != tc.want {
				t.Errorf("= %q, %v; want %q, fails %v, not found %v", id, err, tc.want, tc.fails, tc.notFound)
			}
		})
	}
}
