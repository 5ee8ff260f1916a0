package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

func boundPod(name, rv string) v1.Pod {
	return v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}},
		Spec: v1.PodSpec{NodeName: "node1"}}
}

// fakeAPIServer serves a pod list (p1), then a watch (p2 added, p1
// modified); a watch-list (sendInitialEvents=true, client-go's default since
// 1.35) gets p1 and the initial-events-end bookmark first, as kube-apiserver
// sends them. It answers 404 to anything under /api/v1/services and echoes
// POSTs and PUTs; it records each request.
type fakeAPIServer struct {
	mu   sync.Mutex
	reqs []string
	// bodyTypes are the Content-Types of the request bodies.
	bodyTypes []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	q := r.URL.Query()
	req := r.Method + " " + r.URL.Path + "?" + q.Get("fieldSelector") + " watch=" + q.Get("watch")
	if q.Has("sendInitialEvents") {
		req += " sendInitialEvents=" + q.Get("sendInitialEvents")
	}
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods" && r.URL.Query().Get("watch") != "true":
		_ = json.NewEncoder(w).Encode(v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []v1.Pod{boundPod("p1", "9")}})
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods":
		w.WriteHeader(http.StatusOK)
		p2, p1 := boundPod("p2", "11"), boundPod("p1", "12")
		p1.Labels = map[string]string{"x": "y"}
		events := []struct {
			typ string
			pod v1.Pod
		}{{"ADDED", p2}, {"MODIFIED", p1}}
		if q.Get("sendInitialEvents") == "true" {
			end := v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
			events = append([]struct {
				typ string
				pod v1.Pod
			}{{"ADDED", boundPod("p1", "9")}, {"BOOKMARK", end}}, events...)
		}
		for _, ev := range events {
			b, _ := json.Marshal(ev.pod)
			_, _ = fmt.Fprintf(w, `{"type":%q,"object":%s}`+"\n", ev.typ, b)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	case r.Method == http.MethodPost || r.Method == http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodyTypes = append(f.bodyTypes, r.Header.Get("Content-Type"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", r.Header.Get("Content-Type")) // an echo
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// managed marks a pod that still has managedFields.
func managed(o any) string {
	if len(o.(*v1.Pod).ManagedFields) > 0 {
		return " (with managedFields)"
	}
	return ""
}

// TestPodInformerEventsLease_H1_H11: the pods of this node only (the
// kubelet's field selector) are watched into the informer, the initial
// ones first (one watch-list request, no separate list), without their
// managedFields;
// events are posted and the lease is put under coordination.k8s.io, as
// protobuf when asked to.
func TestPodInformerEventsLease_H1_H11(t *testing.T) {
	fake := &fakeAPIServer{}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		ContentConfig: rest.ContentConfig{ContentType: ContentTypeProtobuf}})
	if err != nil {
		t.Fatal(err)
	}
	inf := c.PodInformer("node1")
	seen := make(chan string, 8)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { seen <- "add " + o.(*v1.Pod).Name + managed(o) },
		UpdateFunc: func(_, o any) { seen <- "update " + o.(*v1.Pod).Name + " x=" + o.(*v1.Pod).Labels["x"] + managed(o) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	var got []string
	for len(got) < 3 {
		select {
		case s := <-seen:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("informer events %q, want the list's add, the watch's add and update", got)
		}
	}
	if want := []string{"add p1", "add p2", "update p1 x=y"}; !slices.Equal(got, want) {
		t.Errorf("informer events %q, want %q", got, want)
	}

	ev, err := c.CreateEvent(ctx, &v1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "p1.", Namespace: "default"}, Reason: "Started"})
	if err != nil || ev.Reason != "Started" {
		t.Fatalf("event: %v %+v", err, ev)
	}
	l, err := c.UpdateLease(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node1", Namespace: "kube-node-lease"}})
	if err != nil || l.Name != "node1" {
		t.Fatalf("lease: %v %+v", err, l)
	}
	fake.mu.Lock()
	reqs, types := slices.Clone(fake.reqs), slices.Clone(fake.bodyTypes)
	fake.mu.Unlock()
	// Bodies go as the configured protobuf (the kubelet's default
	// --kube-api-content-type); the list and watch above were answered in
	// JSON, which is accepted.
	if want := []string{ContentTypeProtobuf, ContentTypeProtobuf}; !slices.Equal(types, want) {
		t.Errorf("request body types %q, want %q", types, want)
	}
	want := []string{
		"GET /api/v1/pods?spec.nodeName=node1 watch=true sendInitialEvents=true",
		"POST /api/v1/namespaces/default/events? watch=",
		"PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node1? watch=",
	}
	if !slices.Equal(reqs, want) {
		t.Errorf("requests\n%q\nwant\n%q", reqs, want)
	}
}

// TestServiceInformerWithoutServices_G4: an API server that does not
// serve Services (404, as skiff's control-plane shim) gives a synced,
// empty service informer, so pods still start (with no service
// variables): the watch-list is answered 404 too, and no plain watch
// follows. The same holds for ClusterTrustBundles and for the node's
// PodCertificateRequests (listed with the kubelet's field selector).
func TestServiceInformerWithoutServices_G4(t *testing.T) {
	for _, tc := range []struct {
		resource string
		informer func(*Client) cache.SharedIndexInformer
		sel      string
	}{
		{"services", (*Client).ServiceInformer, ""},
		{"clustertrustbundles", (*Client).ClusterTrustBundleInformer, ""},
		{"podcertificaterequests", func(c *Client) cache.SharedIndexInformer { return c.PodCertificateRequestInformer("node1") }, "spec.nodeName=node1"},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			fake := &fakeAPIServer{}
			srv := httptest.NewTLSServer(fake)
			defer srv.Close()
			c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
			if err != nil {
				t.Fatal(err)
			}
			inf := tc.informer(c)
			// Bounded: without the 404 handling the informer never syncs.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			defer func() { cancel(); <-done }()
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatalf("not synced in 10 s: a 404 on the %s list must count as an empty list", tc.resource)
			}
			if n := len(inf.GetStore().List()); n != 0 {
				t.Errorf("%d %s, want none", n, tc.resource)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			listed := false
			for _, r := range fake.reqs {
				listed = listed || strings.Contains(r, "/"+tc.resource+"?"+tc.sel+" ")
				if strings.Contains(r, tc.resource) && strings.HasSuffix(r, "watch=true") { // not a watch-list
					t.Errorf("watched %s that are not served: %s", tc.resource, r)
				}
			}
			if !listed {
				t.Errorf("%s never requested: %q", tc.resource, fake.reqs)
			}
		})
	}
}
