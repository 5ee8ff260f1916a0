package deployment

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a controller on a fake clientset whose informers are never
// run: the test fills their caches.
type fixture struct {
	c      *Controller
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	inf    informers.SharedInformerFactory
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rs := a.(k8stesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
		rs.UID = types.UID(rs.Name) // the fake tracker sets none
		return false, nil, nil
	})
	inf := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(Config{Client: client, Deployments: inf.Apps().V1().Deployments(),
		ReplicaSets: inf.Apps().V1().ReplicaSets(), Pods: inf.Core().V1().Pods(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c, client: client, clock: clk, inf: inf}
	for _, o := range objs {
		f.cache(o)
	}
	return f
}

func (f *fixture) cache(obj runtime.Object) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		_ = f.inf.Apps().V1().Deployments().Informer().GetIndexer().Update(o)
	case *appsv1.ReplicaSet:
		_ = f.inf.Apps().V1().ReplicaSets().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		_ = f.inf.Core().V1().Pods().Informer().GetIndexer().Update(o)
	}
}

// step syncs once and copies the client's deployments and replicasets
// into the caches, as the informers would.
func (f *fixture) step(t *testing.T) {
	t.Helper()
	f.client.ClearActions()
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rss, _ := f.client.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
	for i := range rss.Items {
		f.cache(&rss.Items[i])
	}
	d, _ := f.client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	f.cache(d)
}

func (f *fixture) rs(t *testing.T, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (f *fixture) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// settle makes every replicaset's status match its spec, all available.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rss, _ := f.client.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
	for i := range rss.Items {
		rs := &rss.Items[i]
		n := *rs.Spec.Replicas
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: rs.Generation}
		if _, err := f.client.AppsV1().ReplicaSets("ns").UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(rs)
	}
}

func newDeployment(replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	quarter := intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1,
			Annotations: map[string]string{"team": "a", corev1.LastAppliedConfigAnnotation: "{}"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}},
			RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}},
		},
	}
}

func TestComputeHash(t *testing.T) {
	d := newDeployment(1, "nginx")
	h := ComputeHash(&d.Spec.Template, nil)
	if h != ComputeHash(d.Spec.Template.DeepCopy(), nil) || len(h) < 8 {
		t.Fatalf("hash %q not stable", h)
	}
	if h == ComputeHash(&d.Spec.Template, ptr.To[int32](1)) {
		t.Fatal("collision count ignored")
	}
	other := newDeployment(1, "nginx:1.27")
	if h == ComputeHash(&other.Spec.Template, nil) {
		t.Fatal("image ignored")
	}
}

func TestFenceposts(t *testing.T) {
	tests := []struct {
		replicas          int32
		surge, unavail    intstr.IntOrString
		wantS, wantU, max int32
	}{
		{3, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0, 0},
		{4, intstr.FromString("25%"), intstr.FromString("25%"), 1, 1, 1},
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2, 2},
		{3, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1, 1},
		{1, intstr.FromInt32(0), intstr.FromInt32(5), 0, 5, 1},
		{0, intstr.FromInt32(1), intstr.FromInt32(1), 1, 1, 0},
	}
	for _, tt := range tests {
		d := newDeployment(tt.replicas, "nginx")
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &tt.surge, MaxUnavailable: &tt.unavail}
		s, u := resolveFenceposts(d)
		if s != tt.wantS || u != tt.wantU || maxUnavailable(d) != tt.max {
			t.Errorf("%d replicas %v/%v: surge %d unavailable %d max %d", tt.replicas, tt.surge, tt.unavail, s, u, maxUnavailable(d))
		}
	}
	d := newDeployment(3, "nginx")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if maxSurge(d) != 0 || maxUnavailable(d) != 0 {
		t.Error("recreate has fenceposts")
	}
}

func TestNewDeploymentCreatesReplicaSet(t *testing.T) {
	d := newDeployment(3, "nginx")
	f := newFixture(t, d)
	f.step(t)
	hash := ComputeHash(&d.Spec.Template, nil)
	rs := f.rs(t, "web-"+hash)
	ref := metav1.GetControllerOf(rs)
	if ref == nil || ref.UID != d.UID || !*ref.BlockOwnerDeletion || *rs.Spec.Replicas != 3 ||
		rs.Spec.Selector.MatchLabels[HashLabel] != hash || rs.Spec.Template.Labels[HashLabel] != hash || rs.Labels[HashLabel] != hash {
		t.Fatalf("replicaset: %+v", rs)
	}
	wantAnn := map[string]string{RevisionAnnotation: "1", desiredReplicasAnnotation: "3", maxReplicasAnnotation: "4", "team": "a"}
	for k, v := range wantAnn {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if _, ok := rs.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("last-applied copied")
	}
	got := f.deployment(t)
	p := condition(&got.Status, appsv1.DeploymentProgressing)
	if got.Annotations[RevisionAnnotation] != "1" || p == nil || p.Reason != reasonNewRSCreated {
		t.Fatalf("deployment: %v %+v", got.Annotations, got.Status)
	}
	// The pods come up: complete, Available, NewReplicaSetAvailable.
	f.settle(t)
	f.step(t)
	got = f.deployment(t)
	a, p := condition(&got.Status, appsv1.DeploymentAvailable), condition(&got.Status, appsv1.DeploymentProgressing)
	if got.Status.AvailableReplicas != 3 || got.Status.UpdatedReplicas != 3 || got.Status.ObservedGeneration != 1 ||
		a == nil || a.Reason != reasonMinAvailable || p == nil || p.Reason != reasonNewRSAvailable {
		t.Fatalf("status: %+v", got.Status)
	}
}

// TestRollingUpdateSteps follows a 4-replica rollout (maxSurge 1,
// maxUnavailable 1) step by step.
func TestRollingUpdateSteps(t *testing.T) {
	d := newDeployment(4, "nginx")
	f := newFixture(t, d)
	f.step(t)
	f.settle(t)
	f.step(t)
	oldName := "web-" + ComputeHash(&d.Spec.Template, nil)

	d = f.deployment(t)
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	d.Generation++
	if _, err := f.client.AppsV1().Deployments("ns").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cache(d)
	newName := "web-" + ComputeHash(&d.Spec.Template, nil)
	steps := []struct{ old, new int32 }{
		{3, 1}, // new one at 1 (5 pods: maxSurge), old down to 3 (maxUnavailable)
		{3, 2}, // nothing more may go while the new pod is unavailable; 1 more may come
	}
	for i, want := range steps {
		f.step(t)
		if o, n := *f.rs(t, oldName).Spec.Replicas, *f.rs(t, newName).Spec.Replicas; o != want.old || n != want.new {
			t.Fatalf("step %d: old %d new %d, want %d %d", i, o, n, want.old, want.new)
		}
	}
	if f.rs(t, newName).Annotations[RevisionAnnotation] != "2" {
		t.Fatal("new revision")
	}
	for range 10 {
		f.settle(t)
		f.step(t)
	}
	if o, n := *f.rs(t, oldName).Spec.Replicas, *f.rs(t, newName).Spec.Replicas; o != 0 || n != 4 {
		t.Fatalf("end: old %d new %d", o, n)
	}
	got := f.deployment(t)
	if p := condition(&got.Status, appsv1.DeploymentProgressing); p == nil || p.Reason != reasonNewRSAvailable || got.Annotations[RevisionAnnotation] != "2" {
		t.Fatalf("end status: %+v %v", got.Status, got.Annotations)
	}
}

func TestRecreateWaitsForOldPods(t *testing.T) {
	d := newDeployment(2, "nginx")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	f := newFixture(t, d)
	f.step(t)
	f.settle(t)
	f.step(t)
	old := f.rs(t, "web-"+ComputeHash(&d.Spec.Template, nil))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: old.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: old.Name, UID: old.UID, Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	f.cache(pod)

	d = f.deployment(t)
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	d.Generation++
	_, _ = f.client.AppsV1().Deployments("ns").Update(context.Background(), d, metav1.UpdateOptions{})
	f.cache(d)
	newName := "web-" + ComputeHash(&d.Spec.Template, nil)
	f.step(t) // old scaled to 0
	f.settle(t)
	f.step(t) // a pod still runs: no new ReplicaSet
	if *f.rs(t, old.Name).Spec.Replicas != 0 {
		t.Fatal("old not scaled down")
	}
	if _, err := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), newName, metav1.GetOptions{}); err == nil {
		t.Fatal("new replicaset while an old pod runs")
	}
	_ = f.inf.Core().V1().Pods().Informer().GetIndexer().Delete(pod)
	f.step(t)
	if *f.rs(t, newName).Spec.Replicas != 2 {
		t.Fatal("new replicaset not scaled up")
	}
}

func TestCleanupKeepsRevisionHistoryLimit(t *testing.T) {
	d := newDeployment(1, "nginx")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	var objs []runtime.Object
	for i, name := range []string{"r1", "r2", "r3"} {
		objs = append(objs, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Annotations: map[string]string{RevisionAnnotation: string(rune('1' + i))}}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0)}})
	}
	f := newFixture(t, objs...)
	var old []*appsv1.ReplicaSet
	for _, o := range objs {
		old = append(old, o.(*appsv1.ReplicaSet))
	}
	if err := f.c.cleanup(context.Background(), old, d); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range f.client.Actions() {
		if del, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, del.GetName())
		}
	}
	if len(deleted) != 2 || deleted[0] != "r1" || deleted[1] != "r2" {
		t.Fatalf("deleted %v, want r1 r2", deleted)
	}
}

func TestProgressDeadline(t *testing.T) {
	d := newDeployment(1, "nginx")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	f := newFixture(t, d)
	f.step(t) // new ReplicaSet, Progressing NewReplicaSetCreated; no pod ever ready
	f.clock.Step(61 * time.Second)
	f.step(t)
	p := condition(&f.deployment(t).Status, appsv1.DeploymentProgressing)
	if p == nil || p.Reason != reasonTimedOut || p.Status != corev1.ConditionFalse {
		t.Fatalf("progressing: %+v", p)
	}
}

func TestProportionalScaling(t *testing.T) {
	// Mid-rollout (old 8, new 5: 10 + maxSurge 3), scaled to 20.
	d := newDeployment(20, "nginx")
	surge, unavail := intstr.FromInt32(3), intstr.FromInt32(2)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}
	rs := func(name string, n int32, created time.Time) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{maxReplicasAnnotation: "13", desiredReplicasAnnotation: "10"}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(n)}}
	}
	oldRS, newRS := rs("old", 8, t0), rs("new", 5, t0.Add(time.Minute))
	f := newFixture(t, oldRS, newRS)
	if err := f.c.scale(context.Background(), d, newRS, []*appsv1.ReplicaSet{oldRS}); err != nil {
		t.Fatal(err)
	}
	o, n := *f.rs(t, "old").Spec.Replicas, *f.rs(t, "new").Spec.Replicas
	if o+n != 23 || o != 14 || n != 9 {
		t.Fatalf("old %d new %d, want 14 9 (23 = 20 + maxSurge)", o, n)
	}
}
