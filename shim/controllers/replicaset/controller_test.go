package replicaset

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/controllers/worker"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a controller on a fake clientset whose informers are never
// run: the test fills their caches and calls the handlers itself.
type fixture struct {
	c      *Controller
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	inf    informers.SharedInformerFactory
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	created := 0
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			created++
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, created)
			pod.UID = types.UID(pod.Name)
		}
		return false, nil, nil
	})
	inf := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(Config{Client: client, Pods: inf.Core().V1().Pods(), ReplicaSets: inf.Apps().V1().ReplicaSets(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c, client: client, clock: clk, inf: inf}
	for _, o := range objs {
		f.cache(o)
	}
	return f
}

// cache adds obj to its informer's cache.
func (f *fixture) cache(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		_ = f.inf.Core().V1().Pods().Informer().GetIndexer().Add(o)
	case *appsv1.ReplicaSet:
		_ = f.inf.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
	}
}

func (f *fixture) sync(t *testing.T) error {
	t.Helper()
	f.client.ClearActions()
	return f.c.sync(context.Background(), "ns/rs")
}

// actions returns "verb resource[/subresource]" of the client's calls.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func count(actions []string, want string) int {
	n := 0
	for _, a := range actions {
		if a == want {
			n++
		}
	}
	return n
}

func newRS(replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "rs-uid", Generation: 2},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}},
	}
}

type podOpt func(*corev1.Pod)

func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
		Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func owned(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	}
}

func readySince(at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func TestSyncCreatesPodsOnceWithExpectations(t *testing.T) {
	rs := newRS(3)
	f := newFixture(t, rs)
	if err := f.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := count(f.actions(), "create pods"); n != 3 {
		t.Fatalf("creates: %v", f.actions())
	}
	pods, err := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("pods: %v %d", err, len(pods.Items))
	}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || !*ref.BlockOwnerDeletion || p.GenerateName != "rs-" || p.Labels["app"] != "web" {
			t.Errorf("pod %s: %+v", p.Name, p.ObjectMeta)
		}
	}
	// The cache has not seen them: no second round of creations.
	if err := f.sync(t); err != nil || count(f.actions(), "create pods") != 0 {
		t.Fatalf("second sync: %v %v", err, f.actions())
	}
	for i := range pods.Items {
		f.cache(&pods.Items[i])
		f.c.addPod(&pods.Items[i])
	}
	if err := f.sync(t); err != nil || count(f.actions(), "create pods") != 0 {
		t.Fatalf("sync after observation: %v %v", err, f.actions())
	}
	got, _ := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "rs", metav1.GetOptions{})
	if got.Status.Replicas != 3 || got.Status.FullyLabeledReplicas != 3 || got.Status.ObservedGeneration != 2 {
		t.Fatalf("status: %+v", got.Status)
	}
}

func TestSyncDeletesSurplusByRank(t *testing.T) {
	rs := newRS(1)
	keep := newPod("ready", owned(rs), readySince(t0))
	f := newFixture(t, rs, keep,
		newPod("pending", owned(rs), phase(corev1.PodPending)),
		newPod("notready", owned(rs)))
	if err := f.sync(t); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range f.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	if len(deleted) != 2 || (deleted[0] == "ready" || deleted[1] == "ready") {
		t.Fatalf("deleted %v, want pending and notready", deleted)
	}
	// Deletions unseen: nothing more happens; once both are seen (the
	// deletionTimestamp, then the delete), the expectations are met.
	if f.c.expectations.satisfied("ns/rs") {
		t.Fatal("expectations satisfied before the deletions were seen")
	}
	for _, name := range deleted {
		p := newPod(name, owned(rs))
		f.c.deletePod(p)
		f.c.deletePod(p)
	}
	if !f.c.expectations.satisfied("ns/rs") {
		t.Fatal("expectations not satisfied after the deletions were seen")
	}
}

func TestSyncAdoptsAndReleases(t *testing.T) {
	rs := newRS(2)
	orphan := newPod("orphan")
	stray := newPod("stray", owned(rs), func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} })
	foreign := newPod("foreign", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", UID: "x", Controller: ptr.To(true)}}
	})
	f := newFixture(t, rs, orphan, stray, foreign)
	if err := f.sync(t); err != nil {
		t.Fatal(err)
	}
	patched := map[string]string{}
	for _, a := range f.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patched[p.GetName()] = string(p.GetPatch())
		}
	}
	want := map[string]string{
		"orphan": `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"rs-uid","controller":true,"blockOwnerDeletion":true}],"uid":"orphan"}}`,
		"stray":  `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"rs-uid"}],"uid":"stray"}}`,
	}
	for name, patch := range want {
		if patched[name] != patch {
			t.Errorf("patch of %s: %s, want %s", name, patched[name], patch)
		}
	}
	if len(patched) != 2 {
		t.Errorf("patches: %v", patched)
	}
	// 1 adopted of 2: one creation.
	if n := count(f.actions(), "create pods"); n != 1 {
		t.Errorf("creates: %v", f.actions())
	}
}

func TestStatusAvailableAfterMinReadySeconds(t *testing.T) {
	rs := newRS(1)
	rs.Spec.MinReadySeconds = 10
	f := newFixture(t, rs, newPod("p", owned(rs), readySince(t0)))
	f.clock.SetTime(t0.Add(5 * time.Second))
	err := f.sync(t)
	var requeue *worker.Requeue
	if !errors.As(err, &requeue) || requeue.After != 10*time.Second {
		t.Fatalf("sync before minReadySeconds: %v", err)
	}
	got, _ := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "rs", metav1.GetOptions{})
	if got.Status.ReadyReplicas != 1 || got.Status.AvailableReplicas != 0 {
		t.Fatalf("status before: %+v", got.Status)
	}
	f.cache(got)
	f.clock.SetTime(t0.Add(11 * time.Second))
	if err := f.sync(t); err != nil {
		t.Fatal(err)
	}
	got, _ = f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "rs", metav1.GetOptions{})
	if got.Status.AvailableReplicas != 1 {
		t.Fatalf("status after: %+v", got.Status)
	}
}

func TestComparePods(t *testing.T) {
	tests := []struct {
		name   string
		first  *corev1.Pod
		second *corev1.Pod
	}{
		{"unscheduled first", newPod("a", func(p *corev1.Pod) { p.Spec.NodeName = "" }), newPod("b")},
		{"pending before running", newPod("a", phase(corev1.PodPending)), newPod("b")},
		{"unknown before running", newPod("a", phase(corev1.PodUnknown)), newPod("b")},
		{"not ready before ready", newPod("a"), newPod("b", readySince(t0))},
		{"lower deletion cost", newPod("a", func(p *corev1.Pod) { p.Annotations = map[string]string{deletionCostAnnotation: "-1"} }), newPod("b")},
		{"ready more recently", newPod("a", readySince(t0.Add(time.Minute))), newPod("b", readySince(t0))},
		{"more restarts", newPod("a", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: 2}}
		}), newPod("b")},
		{"newer", newPod("a", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour)) }), newPod("b")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if comparePods(tt.first, tt.second) >= 0 || comparePods(tt.second, tt.first) <= 0 {
				t.Fatalf("order of %s", tt.name)
			}
		})
	}
}

func TestExpectationsExpire(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	e := newExpectations(clk)
	e.expectCreations("k", 2)
	e.creationObserved("k")
	if e.satisfied("k") {
		t.Fatal("satisfied with one creation pending")
	}
	clk.Step(expectationsTTL + time.Second)
	if !e.satisfied("k") {
		t.Fatal("not satisfied after the TTL")
	}
}
