package garbagecollector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
)

// fakeDiscovery answers ServerPreferredResources only.
type fakeDiscovery struct {
	discovery.ServerResourcesInterface
	lists []*metav1.APIResourceList
	err   error
}

func (d fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.lists, d.err
}

var allVerbs = metav1.Verbs{"create", "delete", "get", "list", "watch"}

var coreResources = []*metav1.APIResourceList{{
	GroupVersion: "v1",
	APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs},
		{Name: "namespaces", Kind: "Namespace", Verbs: allVerbs},
		{Name: "namespaces/status", Kind: "Namespace", Verbs: metav1.Verbs{"get", "patch"}},
		{Name: "events", Kind: "Event", Namespaced: true, Verbs: allVerbs},
		{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
	},
}, {
	GroupVersion: "coordination.k8s.io/v1",
	APIResources: []metav1.APIResource{{Name: "leases", Kind: "Lease", Namespaced: true, Verbs: allVerbs}},
}}

func TestDeletableResources(t *testing.T) {
	want := map[schema.GroupVersionResource]schema.GroupVersionKind{
		{Version: "v1", Resource: "configmaps"}:                           cmGVK,
		{Version: "v1", Resource: "namespaces"}:                           nsGVK,
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}: {Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
	}
	tests := []struct {
		name    string
		d       fakeDiscovery
		want    map[schema.GroupVersionResource]schema.GroupVersionKind
		wantErr bool
	}{
		{name: "subresources, events and undeletable kinds left out", d: fakeDiscovery{lists: coreResources}, want: want},
		{name: "partial failure: what was found, and the error", d: fakeDiscovery{lists: coreResources, err: errors.New("group x failed")},
			want: want, wantErr: true},
		{name: "failure", d: fakeDiscovery{err: errors.New("down")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := deletableResources(tt.d)
			if (err != nil) != tt.wantErr || !maps.Equal(got, tt.want) {
				t.Fatalf("got %v %v, want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestStripMetadata(t *testing.T) {
	in := cm("a", "x", deleting("f"), owned(cm("a", "o"), true))
	in.Labels = map[string]string{"l": "v"}
	in.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
	in.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	out, err := stripMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*metav1.PartialObjectMetadata)
	if got.Labels != nil || got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("kept %+v", got.ObjectMeta)
	}
	if got.UID != in.UID || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || len(got.OwnerReferences) != 1 || got.Kind != "ConfigMap" {
		t.Errorf("lost what the collector reads: %+v", got)
	}
}

// TestRun: the collector discovers the resources, watches them, collects
// a dependent whose owner is absent, and stops with its context.
func TestRun(t *testing.T) {
	dep := cm("a", "dep", owned(cm("a", "gone"), false))
	f := newFixture(t, dep)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cmGVK, meta.RESTScopeNamespace)
	mapper.Add(nsGVK, meta.RESTScopeRoot)
	gc := New(Config{Metadata: f.client, Discovery: fakeDiscovery{lists: coreResources}, Mapper: mapper,
		Recorder: record.NewFakeRecorder(10), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		gc.Run(ctx)
	}()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, a := range f.client.Actions() {
			if a.GetVerb() == "delete" && a.GetNamespace() == "a" {
				return true, nil
			}
		}
		return false, nil
	})
	cancel()
	if err != nil {
		t.Fatalf("dependent not collected: %v", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
