package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeEvents is an EventProvider with fixed events.
type fakeEvents []v1.Event

func (f fakeEvents) Events() []v1.Event { return slices.Clone(f) }

func podEvent(name, ns, podName string, uid types.UID, fieldPath, typ, reason string) v1.Event {
	return v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: v1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: podName, UID: uid, FieldPath: fieldPath,
		},
		Type: typ, Reason: reason, Count: 1,
		Source: v1.EventSource{Component: "skiff", Host: "node-1"},
	}
}

// testEvents are events of three pods, one of them an earlier pod of the
// same name (another UID).
func testEvents() fakeEvents {
	return fakeEvents{
		podEvent("e1", "default", "web", "uid-old", "", "Normal", "Killing"),
		podEvent("e2", "default", "web", "uid-1", "spec.containers{app}", "Normal", "Pulled"),
		podEvent("e3", "default", "web", "uid-1", "spec.containers{app}", "Warning", "BackOff"),
		podEvent("e4", "kube-system", "dns-node-1", "uid-2", "spec.containers{dns}", "Normal", "Started"),
		podEvent("e5", "default", "api", "uid-3", "spec.initContainers{init}", "Normal", "Created"),
	}
}

func TestEvents(t *testing.T) {
	srv := httptest.NewServer(New(Config{Events: testEvents()}).Handler())
	defer srv.Close()
	tests := []struct {
		name     string
		selector string
		want     string // event names in order
	}{
		{"all, provider order", "", "e1 e2 e3 e4 e5"},
		{"by namespace", "involvedObject.namespace=default", "e1 e2 e3 e5"},
		{"by pod", "involvedObject.name=web,involvedObject.namespace=default", "e1 e2 e3"},
		{"by pod and uid", PodEventSelector("default", "web", "uid-1"), "e2 e3"},
		{"static pod name", "involvedObject.name=dns-node-1", "e4"},
		{"double equals", "involvedObject.uid==uid-3", "e5"},
		{"not equal", "type!=Normal", "e3"},
		{"container field path", `involvedObject.fieldPath=spec.initContainers{init}`, "e5"},
		{"reason and source", "reason=Started,source=skiff", "e4"},
		{"kind and metadata", "involvedObject.kind=Pod,metadata.name=e2", "e2"},
		{"no match", "involvedObject.name=nope", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/events"
			if tt.selector != "" {
				path += "?fieldSelector=" + url.QueryEscape(tt.selector)
			}
			code, body := get(t, srv, http.MethodGet, path)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d %s", path, code, body)
			}
			if !strings.HasPrefix(body, `{"kind":"EventList","apiVersion":"v1",`) {
				t.Errorf("body does not start like an EventList: %.60s", body)
			}
			var list v1.EventList
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range list.Items {
				got = append(got, e.Name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("GET %s = %v, want %s", path, got, tt.want)
			}
		})
	}
}

func TestEventsErrors(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		{"no provider: empty list", Config{}, http.MethodGet, "/events", 200,
			`{"kind":"EventList","apiVersion":"v1","metadata":{},"items":[]}` + "\n"},
		{"unknown field", Config{Events: testEvents()}, http.MethodGet, "/events?fieldSelector=spec.nodeName%3Dx", 400,
			"field label not supported: spec.nodeName\n"},
		{"malformed selector", Config{Events: testEvents()}, http.MethodGet, "/events?fieldSelector=reason", 400, ""},
		{"post", Config{Events: testEvents()}, http.MethodPost, "/events", http.StatusMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(New(tt.cfg).Handler())
			defer srv.Close()
			code, body := get(t, srv, tt.method, tt.path)
			if code != tt.wantCode || (tt.wantBody != "" && body != tt.wantBody) {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestPodEventSelector(t *testing.T) {
	tests := []struct {
		ns, name string
		uid      types.UID
		want     string
	}{
		{"default", "web", "uid-1", "involvedObject.name=web,involvedObject.namespace=default,involvedObject.uid=uid-1"},
		{"default", "web", "", "involvedObject.name=web,involvedObject.namespace=default"},
		{"default", `a,b=c\`, "", `involvedObject.name=a\,b\=c\\,involvedObject.namespace=default`},
	}
	for _, tt := range tests {
		if got := PodEventSelector(tt.ns, tt.name, tt.uid); got != tt.want {
			t.Errorf("PodEventSelector(%q, %q, %q) = %q, want %q", tt.ns, tt.name, tt.uid, got, tt.want)
		}
	}
}

func TestClientEvents(t *testing.T) {
	srv := httptest.NewServer(New(Config{Events: testEvents()}).Handler())
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := c.Events(ctx, PodEventSelector("default", "web", "uid-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[1].Reason != "BackOff" || list.Items[1].Source.Component != "skiff" ||
		list.Items[1].InvolvedObject.FieldPath != "spec.containers{app}" {
		t.Errorf("Events(pod web) = %+v, want its two events with all fields", list.Items)
	}
	all, err := c.Events(ctx, "")
	if err != nil || len(all.Items) != 5 {
		t.Errorf("Events(\"\") = %d items, %v; want 5", len(all.Items), err)
	}
	_, err = c.Events(ctx, "bogus=1")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("Events(bad selector) = %v, want a 400 naming the field", err)
	}
}
