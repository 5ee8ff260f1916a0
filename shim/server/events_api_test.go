package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// newV1Event is a valid events.k8s.io/v1 Event about pod web in ns, as
// client-go's tools/events recorder writes it.
func newV1Event(ns, name string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name},
		EventTime:           metav1.NewMicroTime(time.Now().Truncate(time.Microsecond)),
		ReportingController: "skiff.io/test", ReportingInstance: "test-1",
		Action: "Pulling", Reason: "Pulling", Type: corev1.EventTypeNormal, Note: `Pulling image "nginx"`,
		Regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: "web", UID: "u-web",
			FieldPath: "spec.containers{nginx}"},
		Related: &corev1.ObjectReference{Kind: "Node", Name: "node-a"},
	}
}

// TestEventsAPI: events.k8s.io/v1 and core/v1 Events are one stored
// object (I.57): written through either API, read, listed and watched
// through the other with upstream's field mapping; events.k8s.io's field
// selectors, strict validation, discovery and Table.
func TestEventsAPI(t *testing.T) {
	s, _, client := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "evns"
	createNamespace(ctx, t, client, ns)
	core, v1 := client.CoreV1().Events(ns), client.EventsV1().Events(ns)

	coreList, err := core.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coreWatch, err := core.Watch(ctx, metav1.ListOptions{ResourceVersion: coreList.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer coreWatch.Stop()
	v1Watch, err := v1.Watch(ctx, metav1.ListOptions{ResourceVersion: coreList.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer v1Watch.Stop()

	t.Run("I.57-v1-create-core-read", func(t *testing.T) {
		want := newV1Event(ns, "web.pull")
		made, err := v1.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := core.Get(ctx, "web.pull", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.UID != made.UID || got.ResourceVersion != made.ResourceVersion || got.Message != want.Note ||
			got.InvolvedObject != want.Regarding || got.ReportingController != "skiff.io/test" ||
			got.ReportingInstance != "test-1" || got.Action != "Pulling" || got.Reason != "Pulling" ||
			!got.EventTime.Equal(&want.EventTime) || got.Related == nil || got.Related.Name != "node-a" ||
			got.Count != 0 || got.Source.Component != "" {
			t.Errorf("core view of an events.k8s.io event:\n%+v\nwant from %+v", got, want)
		}
		checkStoredAsCore(ctx, t, s, "/registry/events/"+ns+"/web.pull")
		checkWatched(t, coreWatch, watch.Added, "web.pull", func(o any) bool { return o.(*corev1.Event).Message == want.Note })
		checkWatched(t, v1Watch, watch.Added, "web.pull", func(o any) bool { return o.(*eventsv1.Event).Note == want.Note })
	})

	t.Run("I.57-core-create-v1-read", func(t *testing.T) {
		first := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.started"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", UID: "u-web"},
			Reason:         "Started", Message: "Started container nginx", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-a"}, FirstTimestamp: first, LastTimestamp: first, Count: 3}
		if _, err := core.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := v1.Get(ctx, "web.started", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Note != ev.Message || got.Regarding != ev.InvolvedObject || got.DeprecatedSource != ev.Source ||
			!got.DeprecatedFirstTimestamp.Equal(&first) || !got.DeprecatedLastTimestamp.Equal(&first) ||
			got.DeprecatedCount != 3 || got.Reason != "Started" {
			t.Errorf("events.k8s.io view of a core event: %+v", got)
		}
		checkWatched(t, v1Watch, watch.Added, "web.started", func(o any) bool { return o.(*eventsv1.Event).DeprecatedCount == 3 })
		checkWatched(t, coreWatch, watch.Added, "web.started", nil)
	})

	t.Run("I.57-v1-series-update-core-watch", func(t *testing.T) {
		// client-go's tools/events recorder: a repeated event becomes a
		// series, sent as a merge patch.
		patch := `{"series":{"count":2,"lastObservedTime":"2026-11-25T06:00:00.000000Z"}}`
		if _, err := v1.Patch(ctx, "web.pull", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		checkWatched(t, coreWatch, watch.Modified, "web.pull", func(o any) bool {
			s := o.(*corev1.Event).Series
			return s != nil && s.Count == 2
		})
		checkWatched(t, v1Watch, watch.Modified, "web.pull", nil)
		// The kubelet's core recorder patches count on the same object.
		if _, err := core.Patch(ctx, "web.started", types.StrategicMergePatchType, []byte(`{"count":4}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		checkWatched(t, v1Watch, watch.Modified, "web.started", func(o any) bool { return o.(*eventsv1.Event).DeprecatedCount == 4 })
	})

	t.Run("I.22-field-selectors", func(t *testing.T) {
		testEventFieldSelectors(ctx, t, client, ns)
	})
	t.Run("events-v1-validation-422", func(t *testing.T) {
		testEventValidation(ctx, t, client, ns)
	})
	t.Run("I.72-events-v1-table-and-discovery", func(t *testing.T) {
		testEventsTable(ctx, t, client, ns)
	})

	t.Run("I.57-delete-through-either", func(t *testing.T) {
		if err := v1.Delete(ctx, "web.started", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := core.Get(ctx, "web.started", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("core get after events.k8s.io delete: %v, want 404", err)
		}
	})
}

// checkStoredAsCore: key holds a core/v1 Event in kube-apiserver's
// protobuf envelope (TypeMeta apiVersion "v1", kind "Event"), as a
// kube-apiserver stores events whatever API wrote them.
func checkStoredAsCore(ctx context.Context, t *testing.T, s *Server, key string) {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.etcd.ClientURL()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	resp, err := c.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v %v", key, err, resp)
	}
	if v := resp.Kvs[0].Value; !bytes.HasPrefix(v, []byte("k8s\x00\n\x0b\n\x02v1\x12\x05Event")) {
		t.Errorf("%s stored as %q..., want a core/v1 Event", key, v[:min(len(v), 32)])
	}
}

// checkWatched reads watch events until one of typ for name arrives
// (others for other names or types are skipped), and checks it with ok.
func checkWatched(t *testing.T, w watch.Interface, typ watch.EventType, name string, ok func(any) bool) {
	t.Helper()
	for range 10 {
		ev := nextEvent(t, w)
		obj, isMeta := ev.Object.(metav1.Object)
		if !isMeta || ev.Type != typ || obj.GetName() != name {
			continue
		}
		if ok != nil && !ok(ev.Object) {
			t.Errorf("%s %s on the watch: %+v", typ, name, ev.Object)
		}
		return
	}
	t.Errorf("no %s of %s on the watch", typ, name)
}

func testEventFieldSelectors(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	v1 := client.EventsV1().Events(ns)
	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"regarding.name=web,reportingController=skiff.io/test", []string{"web.pull"}},
		{"regarding.kind=Pod,regarding.fieldPath=spec.containers{nginx}", []string{"web.pull"}},
		{"reason=Started", []string{"web.started"}},
		{"type=Normal,regarding.uid=u-web", []string{"web.pull", "web.started"}},
		{"metadata.name=web.started", []string{"web.started"}},
	} {
		list, err := v1.List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
		if err != nil {
			t.Errorf("%s: %v", tc.selector, err)
			continue
		}
		if got := eventNames(list.Items, func(e eventsv1.Event) string { return e.Name }); !slices.Equal(got, tc.want) {
			t.Errorf("events.k8s.io %s: %v, want %v", tc.selector, got, tc.want)
		}
	}
	// core/v1's labels are not events.k8s.io's (upstream's mapping has
	// neither source nor involvedObject.*).
	for _, bad := range []string{"source=kubelet", "involvedObject.name=web", "note=x"} {
		if _, err := v1.List(ctx, metav1.ListOptions{FieldSelector: bad}); !apierrors.IsBadRequest(err) {
			t.Errorf("events.k8s.io %s: %v, want 400", bad, err)
		}
	}
	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reportingComponent=skiff.io/test,source=skiff.io/test"})
	if got := eventNames(list.Items, func(e corev1.Event) string { return e.Name }); err != nil || !slices.Equal(got, []string{"web.pull"}) {
		t.Errorf("core reportingComponent/source of an events.k8s.io event: %v %v", err, got)
	}
}

func eventNames[E any](items []E, name func(E) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	slices.Sort(out)
	return out
}

// testEventValidation: upstream's events.k8s.io create and update rules,
// with upstream's field paths in the 422's causes.
func testEventValidation(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	v1 := client.EventsV1().Events(ns)
	for _, tc := range []struct {
		name   string
		change func(*eventsv1.Event)
		fields []string
	}{
		{"required", func(e *eventsv1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
		}, []string{"reportingController", "reportingInstance", "action", "reason"}},
		{"no-eventtime", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} },
			[]string{"eventTime"}},
		{"note-too-long", func(e *eventsv1.Event) { e.Note = strings.Repeat("n", 1025) }, []string{"message"}},
		{"lengths", func(e *eventsv1.Event) {
			e.Action, e.Reason, e.ReportingInstance = strings.Repeat("a", 129), strings.Repeat("r", 129), strings.Repeat("i", 129)
		}, []string{"reportingInstance", "action", "reason"}},
		{"bad-controller", func(e *eventsv1.Event) { e.ReportingController = "a b" }, []string{"reportingController"}},
		{"type", func(e *eventsv1.Event) { e.Type = "Info" }, []string{"type"}},
		{"deprecated-set", func(e *eventsv1.Event) {
			e.DeprecatedCount, e.DeprecatedSource.Component = 2, "kubelet"
			e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = metav1.Now(), metav1.Now()
		}, []string{"count", "firstTimestamp", "lastTimestamp", "source"}},
		{"series", func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 1} },
			[]string{"series.count", "series.lastObservedTime"}},
		// Cluster-scoped regarding objects: events in default or
		// kube-system only (a namespaced one may differ: upstream).
		{"regarding-namespace", func(e *eventsv1.Event) { e.Regarding.Namespace = "" }, []string{"involvedObject.namespace"}},
	} {
		ev := newV1Event(ns, "bad-"+tc.name)
		tc.change(ev)
		_, err := v1.Create(ctx, ev, metav1.CreateOptions{})
		checkInvalid(t, "create "+tc.name, err, tc.fields)
	}

	// Updates through events.k8s.io: only the series and metadata change.
	_, err := v1.Patch(ctx, "web.pull", types.MergePatchType, []byte(`{"note":"changed","action":"Other"}`), metav1.PatchOptions{})
	checkInvalid(t, "update note", err, []string{"message", "action"})
	_, err = v1.Patch(ctx, "web.pull", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Errorf("label update through events.k8s.io: %v", err)
	}
	// An event created through core/v1 (deprecated fields set) may be
	// updated through events.k8s.io: the create rules do not apply.
	_, err = v1.Patch(ctx, "web.started", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Errorf("update of a core event through events.k8s.io: %v", err)
	}

	// core/v1 keeps the legacy rules only: no eventTime, nothing required;
	// with an eventTime, the reporting fields are required (upstream).
	core := client.CoreV1().Events(ns)
	old := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Reason: "X",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"}}
	if _, err := core.Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Errorf("legacy core event: %v", err)
	}
	modern := old.DeepCopy()
	modern.Name, modern.EventTime = "modern", metav1.NowMicro()
	_, err = core.Create(ctx, modern, metav1.CreateOptions{})
	checkInvalid(t, "core event with eventTime", err, []string{"reportingController", "reportingInstance", "action"})
}

// checkInvalid: err is a 422 whose causes name exactly fields (some more
// than once: upstream reports an empty reportingController as missing
// and as an invalid name).
func checkInvalid(t *testing.T, what string, err error, fields []string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want 422", what, err)
		return
	}
	var got []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			got = append(got, c.Field)
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	want := slices.Sorted(slices.Values(fields))
	if !slices.Equal(got, want) {
		t.Errorf("%s: fields %v, want %v (%v)", what, got, want, err)
	}
}

// testEventsTable: `kubectl get events.events.k8s.io` gets core events'
// columns (upstream prints both with one printer), and discovery lists
// events.k8s.io/v1 events with the short name ev.
func testEventsTable(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	body, err := client.EventsV1().RESTClient().Get().Namespace(ns).Resource("events").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if want := []string{"Last Seen", "Type", "Reason", "Object", "Message"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	found := false
	for _, r := range table.Rows {
		if len(r.Cells) == 10 && r.Cells[9] == "web.pull" {
			found = true
			if r.Cells[1] != "Normal" || r.Cells[2] != "Pulling" || r.Cells[3] != "pod/web" ||
				r.Cells[5] != "skiff.io/test, test-1" || r.Cells[6] != `Pulling image "nginx"` || r.Cells[8] != float64(2) {
				t.Errorf("row %v", r.Cells)
			}
		}
	}
	if !found {
		t.Errorf("no web.pull row in %s", body)
	}

	resources, err := client.Discovery().ServerResourcesForGroupVersion("events.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "events" {
			if !slices.Equal(r.ShortNames, []string{"ev"}) || !r.Namespaced || r.Kind != "Event" ||
				!slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "patch") {
				t.Errorf("discovery: %+v", r)
			}
			return
		}
	}
	t.Errorf("events.k8s.io/v1 has no events: %+v", resources.APIResources)
}
