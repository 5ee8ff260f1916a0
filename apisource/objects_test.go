package apisource

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/objects"
)

// TestReferencedObjects_G13: every way a pod reads a ConfigMap or Secret
// is watched, each object once.
func TestReferencedObjects_G13(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		Volumes: []v1.Volume{
			{VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
			{VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
			{VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		},
		InitContainers: []v1.Container{{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "envsec"}}}}}},
		Containers: []v1.Container{{Env: []v1.EnvVar{
			{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k"}}},
			{Name: "B", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		}}},
	}}
	var got []string
	for _, r := range referencedObjects(pod) {
		got = append(got, r.resource+"/"+r.namespace+"/"+r.name)
	}
	want := []string{"secrets/ns/pull", "configmaps/ns/cm", "secrets/ns/sec", "configmaps/ns/kube-root-ca.crt", "secrets/ns/envsec"}
	if !slices.Equal(got, want) {
		t.Errorf("references %q, want %q", got, want)
	}
}

// fakeObjects serves one ConfigMap "cm" in "ns" to every watch.
type fakeObjects struct {
	mu      sync.Mutex
	started []string
}

func (f *fakeObjects) ObjectInformer(resource, namespace, name string) cache.SharedIndexInformer {
	f.mu.Lock()
	f.started = append(f.started, resource+"/"+name)
	f.mu.Unlock()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			l := &v1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			if name == "cm" {
				l.Items = []v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: namespace, ResourceVersion: "1"}, Data: map[string]string{"k": "v"}}}
			}
			return l, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &v1.ConfigMap{}, 0, cache.Indexers{})
}

// listOnly marks the fakes' ListWatches as lists and plain watches:
// client-go's watch-list (a watch that starts with the initial objects and
// a bookmark) is exercised against a fake API server in internal/apiclient.
type listOnly struct{}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// TestObjectManagerWatchesReferencedObjects_G13: an API pod's objects are
// watched from its arrival, read from the watch (absent ones are
// NotFound), and the watch stops with the last pod using it.
func TestObjectManagerWatchesReferencedObjects_G13(t *testing.T) {
	api := &fakeObjects{}
	m := NewObjectManager(api, discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	changes := m.Changes()
	pod := func(uid string, cms ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: types.UID(uid)}}
		for _, cm := range cms {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}}})
		}
		return p
	}
	m.SetPods([]*v1.Pod{pod("u1", "cm", "absent"), pod("u2", "cm")})
	cm, err := m.ConfigMap("ns", "cm")
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
	if _, err := m.ConfigMap("ns", "absent"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("absent: %v, want NotFound", err)
	}
	if _, err := m.Secret("ns", "unreferenced"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("unreferenced: %v, want NotFound", err)
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Error("no change signalled for the first listing")
	}
	m.SetPods([]*v1.Pod{pod("u2", "cm")})
	if _, err := m.ConfigMap("ns", "absent"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("after u1 left: %v", err)
	}
	if _, err := m.ConfigMap("ns", "cm"); err != nil {
		t.Errorf("cm still used by u2: %v", err)
	}
	m.SetPods(nil)
	if _, err := m.ConfigMap("ns", "cm"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("cm after the last pod left: %v, want NotFound", err)
	}
	if want := []string{"configmaps/cm", "configmaps/absent"}; !slices.Equal(api.started, want) {
		t.Errorf("watches %q, want %q (one per object)", api.started, want)
	}
}

type fakeTokenAPI struct {
	clock *clocktesting.FakeClock
	n     int
	err   error
	last  *authnv1.TokenRequest
}

func (f *fakeTokenAPI) CreateToken(_ context.Context, ns, sa string, tr *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.n++
	f.last = tr.DeepCopy()
	out := tr.DeepCopy()
	out.Status.Token = ns + "/" + sa + "#" + string(rune('0'+f.n))
	out.Status.ExpirationTimestamp = metav1.NewTime(f.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

// TestTokenManagerRotates_G1: a token is bound to its pod and cached; at
// 80 % of its life it is due (Run signals) and a new one is issued; a
// failed renewal keeps the still valid one.
func TestTokenManagerRotates_G1(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	api := &fakeTokenAPI{clock: clk}
	m := NewTokenManager(api, clk, discard)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	tok := func() string {
		s, err := m.Token(pod, "", 3600)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := tok(); got != "ns/sa#1" {
		t.Fatalf("token %q", got)
	}
	if r := api.last.Spec.BoundObjectRef; r == nil || r.Kind != "Pod" || r.UID != "u1" || len(api.last.Spec.Audiences) != 0 {
		t.Errorf("request %+v: want bound to the pod, the API server's audiences", api.last.Spec)
	}
	clk.Step(47 * time.Minute)
	if got := tok(); got != "ns/sa#1" || m.check(clk.Now()) {
		t.Errorf("at 47 min: token %q, due %t; want the cached one, not due", got, m.check(clk.Now()))
	}
	clk.Step(2 * time.Minute)
	if !m.check(clk.Now()) {
		t.Error("at 49 min (past 80 %) the token is not due")
	}
	api.err = errors.New("apiserver down")
	if got := tok(); got != "ns/sa#1" {
		t.Errorf("failed renewal: token %q, want the valid cached one", got)
	}
	api.err = nil
	if got := tok(); got != "ns/sa#2" {
		t.Errorf("renewal: token %q, want a new one", got)
	}
}
