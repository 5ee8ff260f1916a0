package namespace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/controllers/worker"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// served is what the fake discovery reports: configmaps (list and
// delete only, so items are deleted one by one), pods, and a
// pods/status subresource and a cluster-scoped kind to be skipped.
var served = []*metav1.APIResourceList{{
	GroupVersion: "v1",
	APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Verbs: []string{"get", "list", "delete"}},
		{Name: "pods", Namespaced: true, Verbs: []string{"get", "list", "delete"}},
		{Name: "pods/status", Namespaced: true, Verbs: []string{"get", "update"}},
		{Name: "nodes", Namespaced: false, Verbs: []string{"get", "list", "delete"}},
	},
}}

type fixture struct {
	kube *kubefake.Clientset
	meta *metadatafake.FakeMetadataClient
	c    *Controller
}

// newFixture returns a controller over fakes holding ns, pods (typed, for
// the grace estimate) and content (metadata, for deletion).
func newFixture(t *testing.T, ns *corev1.Namespace, discover func() ([]*metav1.APIResourceList, error), pods []corev1.Pod, content ...runtime.Object) *fixture {
	t.Helper()
	objs := []runtime.Object{ns}
	for i := range pods {
		objs = append(objs, &pods[i])
	}
	kube := kubefake.NewClientset(objs...)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, content...)
	c, err := New(Config{
		Client: kube, Metadata: meta, Discover: discover,
		Namespaces: informers.NewSharedInformerFactory(kube, 0).Core().V1().Namespaces(),
		Clock:      clocktesting.NewFakeClock(now),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{kube: kube, meta: meta, c: c}
}

// deleting is a namespace deleted ago before now, not yet Terminating.
func deleting(ago time.Duration, metaFinalizers ...string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "ns", UID: "uid-1", Finalizers: metaFinalizers,
			DeletionTimestamp: ptr.To(metav1.NewTime(now.Add(-ago)))},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func partial(kind, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers},
	}
}

func runningPod(name string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func servedOK() ([]*metav1.APIResourceList, error) { return served, nil }

func TestSync(t *testing.T) {
	gone := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "x", Version: "v1"}: errors.New("boom")}}
	tests := []struct {
		name       string
		ns         *corev1.Namespace
		discover   func() ([]*metav1.APIResourceList, error)
		pods       []corev1.Pod
		content    []runtime.Object
		podsStay   bool   // pod deletion is graceful: the pod stays
		wantErr    string // substring; "" no error
		wantAfter  time.Duration
		finalized  bool
		conditions map[corev1.NamespaceConditionType]string // type -> reason
		remaining  int                                      // metadata objects left
	}{{
		name:      "I.51 empty namespace is finalized",
		ns:        deleting(time.Second),
		discover:  servedOK,
		finalized: true,
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
			corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
			corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
			corev1.NamespaceContentRemaining:         "ContentRemoved",
			corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
		},
	}, {
		name:      "I.51 configmaps and unscheduled pods are deleted, then finalized",
		ns:        deleting(time.Second),
		discover:  servedOK,
		content:   []runtime.Object{partial("ConfigMap", "a"), partial("ConfigMap", "b"), partial("Pod", "p")},
		finalized: true,
	}, {
		name:      "pods in their grace period: requeue, capped",
		ns:        deleting(10 * time.Second),
		discover:  servedOK,
		pods:      []corev1.Pod{runningPod("p")},
		content:   []runtime.Object{partial("Pod", "p")},
		podsStay:  true,
		wantAfter: DefaultMaxRecheck,
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceContentRemaining:       "SomeResourcesRemain",
			corev1.NamespaceDeletionContentFailure: "ContentDeleted",
		},
		remaining: 1,
	}, {
		name:      "pods first: the configmaps wait until the pods are gone",
		ns:        deleting(10 * time.Second),
		discover:  servedOK,
		pods:      []corev1.Pod{runningPod("p")},
		content:   []runtime.Object{partial("ConfigMap", "a"), partial("Pod", "p")},
		podsStay:  true,
		wantAfter: DefaultMaxRecheck,
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceContentRemaining: "SomeResourcesRemain",
		},
		remaining: 2,
	}, {
		name:     "pods past their grace period are an error",
		ns:       deleting(time.Minute),
		discover: servedOK,
		pods:     []corev1.Pod{runningPod("p")},
		content:  []runtime.Object{partial("Pod", "p")},
		podsStay: true,
		wantErr:  "unexpected items still remain in namespace: ns for gvr: /v1, Resource=pods",
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionContentFailure: "ContentDeletionFailed",
		},
		remaining: 1,
	}, {
		name:      "content with finalizers: requeue",
		ns:        deleting(time.Second),
		discover:  servedOK,
		content:   []runtime.Object{partial("Pod", "p", "example.com/hold")},
		podsStay:  true,
		wantAfter: DefaultMaxRecheck,
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceFinalizersRemaining: "SomeFinalizersRemain",
		},
		remaining: 1,
	}, {
		name: "partial discovery: what was found is deleted, error kept",
		ns:   deleting(time.Second),
		discover: func() ([]*metav1.APIResourceList, error) {
			return served, gone
		},
		content: []runtime.Object{partial("ConfigMap", "a")},
		wantErr: "unable to retrieve the complete list of server APIs",
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionDiscoveryFailure: "DiscoveryFailed",
		},
	}, {
		name: "unparsable group version",
		ns:   deleting(time.Second),
		discover: func() ([]*metav1.APIResourceList, error) {
			return []*metav1.APIResourceList{{GroupVersion: "a/b/c"}}, nil
		},
		wantErr: "unexpected GroupVersion string",
		conditions: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionGVParsingFailure: "GroupVersionParsingFailed",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.ns, tt.discover, tt.pods, tt.content...)
			if tt.podsStay {
				f.meta.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, nil
				})
			}
			err := f.c.sync(context.Background(), "ns")
			checkErr(t, err, tt.wantErr, tt.wantAfter)
			ns, gerr := f.kube.CoreV1().Namespaces().Get(context.Background(), "ns", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if ns.Status.Phase != corev1.NamespaceTerminating {
				t.Errorf("phase %q, want Terminating", ns.Status.Phase)
			}
			if got := !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes); got != tt.finalized {
				t.Errorf("finalized %v, want %v (spec.finalizers %v)", got, tt.finalized, ns.Spec.Finalizers)
			}
			checkConditions(t, ns.Status.Conditions, tt.conditions)
			left := 0
			for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "pods"}} {
				l, _ := f.meta.Resource(gvr).Namespace("ns").List(context.Background(), metav1.ListOptions{})
				left += len(l.Items)
			}
			if left != tt.remaining {
				t.Errorf("%d objects left, want %d", left, tt.remaining)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string, wantAfter time.Duration) {
	t.Helper()
	var requeue *worker.Requeue
	switch {
	case wantAfter != 0:
		if !errors.As(err, &requeue) || requeue.After != wantAfter {
			t.Fatalf("sync: %v, want a requeue after %v", err, wantAfter)
		}
	case want == "":
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
	case err == nil || !strings.Contains(err.Error(), want):
		t.Fatalf("sync: %v, want %q", err, want)
	}
}

func checkConditions(t *testing.T, got []corev1.NamespaceCondition, want map[corev1.NamespaceConditionType]string) {
	t.Helper()
	for typ, reason := range want {
		c := findCondition(got, typ)
		if c == nil || c.Reason != reason {
			t.Errorf("condition %s: %+v, want reason %s", typ, c, reason)
			continue
		}
		wantStatus := corev1.ConditionFalse
		if okReasons[typ] != reason {
			wantStatus = corev1.ConditionTrue
		}
		if c.Status != wantStatus || c.Message == "" || !c.LastTransitionTime.Time.Equal(now) {
			t.Errorf("condition %s: %+v, want status %s at %v", typ, c, wantStatus, now)
		}
	}
}

func TestSyncIgnores(t *testing.T) {
	active := deleting(0)
	active.DeletionTimestamp = nil
	f := newFixture(t, active, servedOK, nil, partial("ConfigMap", "a"))
	if err := f.c.sync(context.Background(), "ns"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(context.Background(), "missing"); err != nil {
		t.Fatalf("missing namespace: %v", err)
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("unexpected action on an active namespace: %v", a)
		}
	}
	if len(f.meta.Actions()) != 0 {
		t.Errorf("content touched: %v", f.meta.Actions())
	}
}

// TestSyncRetriesConflicts: a conflict on the status update is retried on
// the latest namespace.
func TestSyncRetriesConflicts(t *testing.T) {
	f := newFixture(t, deleting(time.Second), servedOK, nil)
	conflicts := 1
	f.kube.PrependReactor("update", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "namespaces"}, "ns", errors.New("changed"))
		}
		return false, nil, nil
	})
	if err := f.c.sync(context.Background(), "ns"); err != nil {
		t.Fatal(err)
	}
	if conflicts != 0 {
		t.Fatal("no status update attempted")
	}
}

// TestEnqueue: only namespaces being deleted are queued, after the
// deletion delay, driven by the fake clock.
func TestEnqueue(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	kube := kubefake.NewClientset()
	c, err := New(Config{
		Client: kube, Metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), Discover: servedOK,
		Namespaces: informers.NewSharedInformerFactory(kube, 0).Core().V1().Namespaces(), Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	active := deleting(0)
	active.DeletionTimestamp = nil
	c.enqueue(active)
	c.enqueue(deleting(time.Second))
	if c.queue.Len() != 0 {
		t.Fatalf("queued before the delay: %d", c.queue.Len())
	}
	if err := stepUntilQueued(clk, c, 1); err != nil {
		t.Fatal(err)
	}
	if key, _ := c.queue.Get(); key != "ns" {
		t.Fatalf("queued %q", key)
	}
}

// stepUntilQueued steps the fake clock by the deletion delay until the
// queue holds n keys. The queue's delaying goroutine reads the clock on
// its own schedule, so a single step may come before it armed its timer;
// the time between polls is not what the test measures.
func stepUntilQueued(clk *clocktesting.FakeClock, c *Controller, n int) error {
	for range 1000 {
		clk.Step(DefaultDeletionDelay)
		if c.queue.Len() == n {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("keys never queued")
}
