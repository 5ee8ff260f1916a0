package apisource

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/nodestatus"
)

func apiPod(name string, uid types.UID, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, ResourceVersion: rv}}
}

func running(p *v1.Pod) *v1.Pod {
	c := p.DeepCopy()
	c.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	return c
}

// TestStatusManagerPatchesAndDeletes_A46: a pod's status is patched once
// per change (not again while the API has not echoed it); a deleted pod is
// removed with grace 0 and its UID as precondition only once the agent
// has nothing of it left, and only once.
func TestStatusManagerPatchesAndDeletes_A46(t *testing.T) {
	api := &fakeAPI{}
	pods := &fakePods{pods: map[types.UID]*v1.Pod{}, terminated: map[types.UID]bool{}}
	idx := NewIndex()
	m := NewStatusManager(api, pods, idx, 0, discard)
	ctx := context.Background()

	p := apiPod("web", "u1", "1")
	idx.set(p, false)
	pods.pods["u1"] = running(p)
	m.sync(ctx, "u1")
	m.sync(ctx, "u1")
	if c := api.Calls(); len(c) != 1 || !strings.HasPrefix(c[0], `PatchPodStatus default/web {"metadata":{"uid":"u1"}`) {
		t.Fatalf("calls %q, want one status patch", c)
	}
	// The API echoes the status: nothing more to send.
	echoed := running(p)
	echoed.ResourceVersion = "2"
	idx.set(echoed, false)
	m.sync(ctx, "u1")
	if c := api.Calls(); len(c) != 1 {
		t.Fatalf("calls %q after the echo, want no new patch", c)
	}

	// Deleted: the worker still runs, so no delete yet.
	del := echoed.DeepCopy()
	now := metav1.Now()
	del.DeletionTimestamp, del.ResourceVersion = &now, "3"
	idx.set(del, false)
	m.sync(ctx, "u1")
	if c := api.Calls(); len(c) != 1 {
		t.Fatalf("calls %q while terminating, want no delete", c)
	}
	delete(pods.pods, "u1")
	pods.terminated["u1"] = true
	m.sync(ctx, "u1")
	m.sync(ctx, "u1")
	want := "DeletePod default/web uid=u1 grace=0"
	if c := api.Calls(); len(c) != 2 || c[1] != want {
		t.Fatalf("calls %q, want one %q", c, want)
	}
}

// TestStatusManagerMirrorStatus_H15: a static pod's status goes to its
// mirror pod (the mirror's UID as precondition); a mirror of another
// version of the static pod gets none.
func TestStatusManagerMirrorStatus_H15(t *testing.T) {
	api := &fakeAPI{}
	pods := &fakePods{pods: map[types.UID]*v1.Pod{}}
	idx := NewIndex()
	m := NewStatusManager(api, pods, idx, 0, discard)
	static := running(apiPod("etcd-n1", "static1", ""))
	static.Annotations = map[string]string{ConfigSourceAnnotation: SourceFile, ConfigHashAnnotation: "static1"}
	pods.pods["static1"] = static
	mirror := apiPod("etcd-n1", "m1", "1")
	mirror.Annotations = map[string]string{ConfigMirrorAnnotation: "old"}
	idx.set(mirror, false)
	m.sync(context.Background(), "static1")
	if c := api.Calls(); len(c) != 0 {
		t.Fatalf("calls %q for a stale mirror, want none", c)
	}
	mirror = mirror.DeepCopy()
	mirror.Annotations[ConfigMirrorAnnotation] = "static1"
	idx.set(mirror, false)
	m.sync(context.Background(), "static1")
	if c := api.Calls(); len(c) != 1 || !strings.HasPrefix(c[0], `PatchPodStatus default/etcd-n1 {"metadata":{"uid":"m1"}`) {
		t.Fatalf("calls %q, want the mirror's status patch", c)
	}
}

// TestPlanMirrors_H15_H16: a mirror for each static pod; a mirror of an
// older version, of no static pod, or deleted by someone is deleted (to be
// re-created); the mirror is owned by the Node and annotated with the hash.
func TestPlanMirrors_H15_H16(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "nu"}}
	static := func(name, hash string) *v1.Pod {
		p := apiPod(name, types.UID(hash), "")
		p.Annotations = map[string]string{ConfigHashAnnotation: hash, ConfigSourceAnnotation: SourceFile}
		p.Spec.NodeName = "n1"
		return p
	}
	mirror := func(name, hash string, deleting bool) *v1.Pod {
		p := apiPod(name, types.UID("m-"+name), "1")
		p.Annotations = map[string]string{ConfigMirrorAnnotation: hash}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	creates, deletes := planMirrors(
		[]*v1.Pod{static("new", "h1"), static("same", "h2"), static("edited", "h3"), static("going", "h4")},
		[]*v1.Pod{mirror("same", "h2", false), mirror("edited", "old", false), mirror("going", "old", true), mirror("orphan", "h9", false)},
		node)
	var names []string
	for _, p := range creates {
		names = append(names, "create "+p.Name)
	}
	for _, p := range deletes {
		names = append(names, "delete "+p.Name)
	}
	if want := []string{"create new", "delete edited", "delete going", "delete orphan"}; !slices.Equal(names, want) {
		t.Fatalf("plan %q, want %q", names, want)
	}
	c := creates[0]
	if c.Annotations[ConfigMirrorAnnotation] != "h1" || c.UID != "" || c.Spec.NodeName != "n1" {
		t.Errorf("mirror %+v: want config.mirror=h1, no UID, bound to n1", c.ObjectMeta)
	}
	if o := c.OwnerReferences; len(o) != 1 || o[0].Kind != "Node" || o[0].UID != "nu" || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("owners %+v, want the Node as controller", o)
	}
}

// TestDesiredPods_H1: the agent's list is annotated config.source=api and
// only changes when something the agent acts on did (the set, a deletion,
// a terminal phase), not on a status echo.
func TestDesiredPods_H1(t *testing.T) {
	var d desired
	p := apiPod("a", "u1", "1")
	list, changed := d.update([]*v1.Pod{p})
	if !changed || len(list) != 1 || list[0].Annotations[ConfigSourceAnnotation] != SourceAPI {
		t.Fatalf("first list %v changed=%t", list, changed)
	}
	echo := running(p)
	echo.ResourceVersion = "2"
	if l, changed := d.update([]*v1.Pod{echo}); changed || l[0] != list[0] {
		t.Errorf("a status echo changed the list (%t) or gave a new object (%t)", changed, l[0] != list[0])
	}
	del := echo.DeepCopy()
	now, g := metav1.Now(), int64(5)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds, del.ResourceVersion = &now, &g, "3"
	if l, changed := d.update([]*v1.Pod{del}); !changed || *l[0].DeletionGracePeriodSeconds != 5 {
		t.Error("a deletion did not change the list")
	}
	if _, changed := d.update(nil); !changed {
		t.Error("a removal did not change the list")
	}
}

// TestDesiredPodsEdits_H1: an edit a running pod takes (image,
// activeDeadlineSeconds, labels, annotations) gives the agent the new
// object; a status echo does not, even for a pod that carries the
// config.source annotation itself.
func TestDesiredPodsEdits_H1(t *testing.T) {
	deadline := int64(30)
	tests := []struct {
		name string
		edit func(*v1.Pod)
		want bool
	}{
		{"status only", func(p *v1.Pod) { p.Status.PodIP = "10.88.0.9" }, false},
		{"image", func(p *v1.Pod) { p.Spec.Containers[0].Image = "busybox:2" }, true},
		{"activeDeadlineSeconds", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline }, true},
		{"label added", func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} }, true},
		{"annotation changed", func(p *v1.Pod) { p.Annotations["a"] = "2" }, true},
		{"annotation removed", func(p *v1.Pod) { delete(p.Annotations, "a") }, true},
		{"config.source set by the user (the source overrides it)", func(p *v1.Pod) { p.Annotations[ConfigSourceAnnotation] = "file" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d desired
			p := apiPod("a", "u1", "1")
			p.Annotations = map[string]string{"a": "1"}
			p.Spec.Containers = []v1.Container{{Name: "app", Image: "busybox:1"}}
			if _, changed := d.update([]*v1.Pod{p}); !changed {
				t.Fatal("first list unchanged")
			}
			next := p.DeepCopy()
			next.ResourceVersion = "2"
			tt.edit(next)
			list, changed := d.update([]*v1.Pod{next})
			if changed != tt.want {
				t.Fatalf("changed = %t, want %t", changed, tt.want)
			}
			if list[0].Annotations[ConfigSourceAnnotation] != SourceAPI {
				t.Errorf("annotation %q = %q", ConfigSourceAnnotation, list[0].Annotations[ConfigSourceAnnotation])
			}
			echo := next.DeepCopy()
			echo.ResourceVersion = "3"
			echo.Status.Phase = v1.PodRunning
			if _, changed := d.update([]*v1.Pod{echo}); changed {
				t.Error("a status echo after the edit changed the list")
			}
		})
	}
}

// TestNodeRegistration_H1_H10: a new node is created; an existing one is
// adopted with its default labels fixed; the status is sent on the first
// update and then only on a change or after the report frequency, each
// time on the Node as read then (others' taints stay); a conflict tries
// once more.
func TestNodeRegistration_H1_H10(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	api := &fakeAPI{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "nu", Labels: map[string]string{v1.LabelHostname: "other"}}}}
	reg := nodestatus.Registration{Name: "n1", Hostname: "n1", OS: "linux", Arch: "amd64"}
	facts := nodestatus.Facts{Capacity: v1.ResourceList{}, Allocatable: v1.ResourceList{}}
	n := NewNodeManager(NodeConfig{API: api, Registration: reg, Register: true, Clock: clk, Logger: discard,
		Facts: func(context.Context) (nodestatus.Facts, nodestatus.Health) { return facts, nodestatus.Health{} }})
	ctx := context.Background()
	if err := n.register(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n.Node().Labels[v1.LabelHostname]; got != "n1" {
		t.Errorf("hostname label %q, want fixed to n1", got)
	}
	api.fail("UpdateNodeStatus", apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", nil))
	for range 3 {
		if err := n.updateStatus(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Step(10 * time.Second)
	}
	clk.Step(nodestatus.DefaultReportFrequency)
	if err := n.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"CreateNode n1", "GetNode n1", "UpdateNode n1",
		"GetNode n1", "UpdateNodeStatus n1", "GetNode n1", "UpdateNodeStatus n1", // the conflict, then the first status
		"GetNode n1", "UpdateNodeStatus n1"} // after the report frequency
	if got := api.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls\n%q\nwant\n%q", got, want)
	}
	if c := n.Node().Status.Conditions; len(c) != 4 {
		t.Errorf("conditions %+v, want the four", c)
	}
}

// TestNodeStatusTaintRace: a status update that NodeRestriction refuses
// because the taints changed since the node was read (the lifecycle
// controller's not-ready taint on a new node) is sent again on a fresh
// read, at once, as a conflict is.
func TestNodeStatusTaintRace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	api := &fakeAPI{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "nu"}}}
	n := NewNodeManager(NodeConfig{API: api, Registration: nodestatus.Registration{Name: "n1", Hostname: "n1"}, Register: true, Clock: clk, Logger: discard,
		Facts: func(context.Context) (nodestatus.Facts, nodestatus.Health) {
			return nodestatus.Facts{Capacity: v1.ResourceList{}, Allocatable: v1.ResourceList{}}, nodestatus.Health{}
		}})
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := len(api.Calls())
	api.fail("UpdateNodeStatus", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n1",
		errors.New(`node "n1" is not allowed to modify taints`)))
	if err := n.updateStatus(context.Background()); err != nil {
		t.Fatalf("updateStatus: %v, want the refused update sent again", err)
	}
	want := []string{"GetNode n1", "UpdateNodeStatus n1", "GetNode n1", "UpdateNodeStatus n1"}
	if got := api.Calls()[before:]; !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	api.fail("UpdateNodeStatus", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("other")))
	clk.Step(nodestatus.DefaultReportFrequency)
	if err := n.updateStatus(context.Background()); err == nil {
		t.Error("another Forbidden was retried or ignored")
	}
}

// TestLeaseRenewal_H11: the lease is created when missing (owned by the
// Node once known), then updated; a failed update re-reads it.
func TestLeaseRenewal_H11(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	api := &fakeAPI{}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "nu"}}
	m := &LeaseManager{API: api, Node: func() *v1.Node { return node.DeepCopy() }, Name: "n1", DurationSeconds: 40, Clock: clk, Logger: discard}
	ctx := context.Background()
	for range 2 {
		if err := m.renew(ctx); err != nil {
			t.Fatal(err)
		}
	}
	api.fail("UpdateLease", apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "n1", nil))
	if err := m.renew(ctx); err == nil {
		t.Fatal("conflict not reported")
	}
	if err := m.renew(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"GetLease kube-node-lease/n1", "CreateLease kube-node-lease/n1", "UpdateLease kube-node-lease/n1",
		"UpdateLease kube-node-lease/n1", "GetLease kube-node-lease/n1", "UpdateLease kube-node-lease/n1"}
	if got := api.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls\n%q\nwant\n%q", got, want)
	}
	if o := api.lease.OwnerReferences; len(o) != 1 || o[0].UID != "nu" {
		t.Errorf("lease owners %+v, want the node", o)
	}
	if d := *api.lease.Spec.LeaseDurationSeconds; d != 40 {
		t.Errorf("duration %d", d)
	}
}

// TestStatusManagerFinalStatusBeforeDelete: the agent's last status of a
// deleted pod (its containers stopped) is sent before the pod is deleted,
// so that a pod a finalizer keeps shows its containers terminated.
func TestStatusManagerFinalStatusBeforeDelete(t *testing.T) {
	api := &fakeAPI{}
	pods := &fakePods{pods: map[types.UID]*v1.Pod{}, terminated: map[types.UID]bool{"u1": true}, final: map[types.UID]*v1.Pod{}}
	idx := NewIndex()
	m := NewStatusManager(api, pods, idx, 0, discard)
	p := apiPod("web", "u1", "1")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	idx.set(p, false)
	final := p.DeepCopy()
	final.Status.Phase = v1.PodSucceeded
	pods.final["u1"] = final
	m.sync(context.Background(), "u1")
	c := api.Calls()
	if len(c) != 2 || !strings.HasPrefix(c[0], `PatchPodStatus default/web`) || !strings.Contains(c[0], `"phase":"Succeeded"`) || c[1] != "DeletePod default/web uid=u1 grace=0" {
		t.Fatalf("calls %q, want the final status patch, then the delete", c)
	}
}
