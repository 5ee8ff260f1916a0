package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
)

func get(t *testing.T, srv *httptest.Server, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestPods(t *testing.T) {
	pod := func(ns, name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	provided := []*v1.Pod{pod("default", "web"), pod("kube-system", "a"), pod("default", "api"), nil}
	pods := &fakePods{pods: provided}
	srv := httptest.NewServer(New(Config{Pods: pods}).Handler())
	defer srv.Close()

	code, body := get(t, srv, http.MethodGet, "/pods")
	if code != http.StatusOK {
		t.Fatalf("GET /pods = %d %s", code, body)
	}
	if !strings.HasPrefix(body, `{"kind":"PodList","apiVersion":"v1",`) {
		t.Errorf("body does not start like the kubelet's PodList: %.60s", body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Items {
		got = append(got, p.Namespace+"/"+p.Name)
	}
	if want := "default/api default/web kube-system/a"; strings.Join(got, " ") != want {
		t.Errorf("items = %v, want %s", got, want)
	}
	if provided[0].Name != "web" || provided[2].Name != "api" {
		t.Error("server reordered the provider's slice")
	}

	pods.set()
	if _, body := get(t, srv, http.MethodGet, "/pods"); !strings.Contains(body, `"items":[]`) {
		t.Errorf("empty node: body = %s, want an empty items array", body)
	}
}

func TestRoutes(t *testing.T) {
	healthy := func(context.Context) error { return nil }
	sick := func(context.Context) error { return errors.New("runtime down") }
	tests := []struct {
		name     string
		healthz  func(context.Context) error
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		{"healthz default", nil, http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"healthz ok", healthy, http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"healthz failing", sick, http.MethodGet, "/healthz", http.StatusInternalServerError, "healthz check failed: runtime down\n"},
		{"post pods", nil, http.MethodPost, "/pods", http.StatusMethodNotAllowed, ""},
		{"delete healthz", nil, http.MethodDelete, "/healthz", http.StatusMethodNotAllowed, ""},
		{"put logs", nil, http.MethodPut, "/containerLogs/default/web/app", http.StatusMethodNotAllowed, ""},
		{"unknown path", nil, http.MethodGet, "/spec", http.StatusNotFound, ""},
		{"logs path too short", nil, http.MethodGet, "/containerLogs/default/web", http.StatusNotFound, ""},
		{"no profiles unless asked", nil, http.MethodGet, "/debug/pprof/", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(New(Config{Pods: &fakePods{}, Healthz: tt.healthz}).Handler())
			defer srv.Close()
			code, body := get(t, srv, tt.method, tt.path)
			if code != tt.wantCode || (tt.wantBody != "" && body != tt.wantBody) {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestProfiling(t *testing.T) {
	srv := httptest.NewServer(New(Config{Pods: &fakePods{}, Profiling: true}).Handler())
	defer srv.Close()
	if code, body := get(t, srv, http.MethodGet, "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine profile = %d %.80q", code, body)
	}
}

func TestContainerLogs(t *testing.T) {
	root := setupLogs(t)
	pods := &fakePods{pods: []*v1.Pod{webPod(running())}}
	srv := httptest.NewServer(New(Config{Pods: pods, PodLogsDir: root}).Handler())
	defer srv.Close()

	tests := []struct {
		name     string
		path     string
		wantCode int
		wantBody string
	}{
		{"current run", "/containerLogs/default/web/app", 200, "second run\nstill going\n"},
		{"previous run", "/containerLogs/default/web/app?previous=true", 200, "first run\ncrashed\n"},
		{"tail", "/containerLogs/default/web/app?tailLines=1", 200, "still going\n"},
		{"tail 0", "/containerLogs/default/web/app?tailLines=0", 200, ""},
		{"timestamps", "/containerLogs/default/web/app?timestamps=true&tailLines=1", 200,
			"2024-05-01T10:01:01Z still going\n"},
		{"init container (A.35)", "/containerLogs/default/web/init", 200, "init done\n"},
		{"follow of a terminated run ends", "/containerLogs/default/web/init?follow=true", 200, "init done\n"},
		{"no previous run", "/containerLogs/default/web/init?previous=true", 400,
			"previous terminated container \"init\" in pod \"web\" not found\n"},
		{"waiting", "/containerLogs/default/web/creating", 400,
			"container \"creating\" in pod \"web\" is waiting to start: ContainerCreating\n"},
		{"image pull backoff", "/containerLogs/default/web/pulling", 400,
			"container \"pulling\" in pod \"web\" is waiting to start: trying and failing to pull image\n"},
		{"no status", "/containerLogs/default/web/nostatus", 400,
			"container \"nostatus\" in pod \"web\" is not available\n"},
		{"unknown pod", "/containerLogs/default/nope/app", 404, "pod \"nope\" does not exist\n"},
		{"pod in other namespace", "/containerLogs/other/web/app", 404, "pod \"web\" does not exist\n"},
		{"unknown container", "/containerLogs/default/web/db", 404, "container \"db\" not found in pod \"web\"\n"},
		{"bad tailLines", "/containerLogs/default/web/app?tailLines=x", 400, "invalid tailLines \"x\": must be an integer\n"},
		{"negative tailLines", "/containerLogs/default/web/app?tailLines=-1", 422,
			"tailLines must be a non-negative number, got -1\n"},
		{"bad bool", "/containerLogs/default/web/app?follow=maybe", 400, "invalid follow \"maybe\": must be true or false\n"},
		{"limitBytes", "/containerLogs/default/web/app?limitBytes=1", 200, "s"},
		{"sinceTime", "/containerLogs/default/web/app?sinceTime=2024-05-01T10:01:01Z", 200, "still going\n"},
		{"sinceSeconds (all lines older)", "/containerLogs/default/web/app?sinceSeconds=1", 200, ""},
		{"sinceSeconds (all lines newer)", "/containerLogs/default/web/app?sinceSeconds=999999999", 200, "second run\nstill going\n"},
		{"stream", "/containerLogs/default/web/app?stream=Stderr", 200, ""},
		{"limitBytes 0", "/containerLogs/default/web/app?limitBytes=0", 422, "limitBytes must be greater than 0, got 0\n"},
		{"both sinces", "/containerLogs/default/web/app?sinceSeconds=1&sinceTime=2024-05-01T10:01:01Z", 422,
			"at most one of `sinceTime` or `sinceSeconds` may be specified\n"},
		{"bad sinceTime", "/containerLogs/default/web/app?sinceTime=yesterday", 400, "invalid sinceTime \"yesterday\": must be RFC 3339\n"},
		{"stream and tail", "/containerLogs/default/web/app?stream=Stdout&tailLines=1", 422,
			"`tailLines` and specific `stream` are mutually exclusive for now\n"},
		{"bad stream", "/containerLogs/default/web/app?stream=both", 422,
			"stream: Unsupported value: \"both\": supported values: \"All\", \"Stderr\", \"Stdout\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, srv, http.MethodGet, tt.path)
			if code != tt.wantCode || body != tt.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestContainerLogsMissingFile(t *testing.T) {
	pods := &fakePods{pods: []*v1.Pod{webPod(running())}}
	srv := httptest.NewServer(New(Config{Pods: pods, PodLogsDir: t.TempDir()}).Handler())
	defer srv.Close()
	code, body := get(t, srv, http.MethodGet, "/containerLogs/default/web/app")
	if code != http.StatusBadRequest || !strings.Contains(body, "no log file") {
		t.Errorf("GET logs without a file = %d %q, want 400 no log file", code, body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	root := setupLogs(t)
	pods := &fakePods{pods: []*v1.Pod{webPod(running())}}
	srv := httptest.NewServer(New(Config{Pods: pods, PodLogsDir: root, LogPollInterval: time.Millisecond}).Handler())
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	out := newNotifyBuffer()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Logs(context.Background(), "default", "web", "app", LogOptions{Follow: true, TailLines: 1}, out)
	}()
	out.waitFor(t, "still going\n")

	logPath := podlogs.ContainerLogPath(podlogs.PodDir(root, "default", "web", "uid-1"), "app", 1)
	appendFile(t, logPath, "2024-05-01T10:02:00Z stdout F more\n")
	out.waitFor(t, "still going\nmore\n")

	// The run ends: its last words arrive and the stream closes.
	appendFile(t, logPath, "2024-05-01T10:02:01Z stderr F exiting\n")
	pods.set(webPod(terminated(0, "Completed")))
	if err := waitErr(t, errc); err != nil {
		t.Fatalf("Logs = %v, want nil once the container stopped", err)
	}
	if got, want := out.String(), "still going\nmore\nexiting\n"; got != want {
		t.Errorf("followed output = %q, want %q", got, want)
	}
}

func TestClientErrors(t *testing.T) {
	pods := &fakePods{pods: []*v1.Pod{webPod(running())}}
	srv := httptest.NewServer(New(Config{Pods: pods, Healthz: func(context.Context) error { return errors.New("sick") }}).Handler())
	defer srv.Close()
	c, err := NewClient(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	err = c.Logs(context.Background(), "default", "nope", "app", LogOptions{TailLines: -1}, io.Discard)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound || err.Error() != `pod "nope" does not exist` {
		t.Errorf("Logs(unknown pod) = %v, want a 404 StatusError with the server's message", err)
	}
	err = c.Healthz(context.Background())
	if !errors.As(err, &se) || se.Code != http.StatusInternalServerError || !strings.Contains(err.Error(), "sick") {
		t.Errorf("Healthz = %v, want a 500 StatusError mentioning the cause", err)
	}
}

func TestNewClient(t *testing.T) {
	tests := []struct {
		addr     string
		wantBase string
		wantErr  bool
	}{
		{addr: "/var/lib/skiff/skiff.sock", wantBase: "http://localhost"},
		{addr: "unix:///var/lib/skiff/skiff.sock", wantBase: "http://localhost"},
		{addr: "http://127.0.0.1:10255", wantBase: "http://127.0.0.1:10255"},
		{addr: "http://127.0.0.1:10255/", wantBase: "http://127.0.0.1:10255"},
		{addr: "https://node:10250", wantBase: "https://node:10250"},
		{addr: "unix://relative.sock", wantErr: true},
		{addr: "skiff.sock", wantErr: true},
		{addr: "ftp://host:21", wantErr: true},
		{addr: "", wantErr: true},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.addr)
		if tt.wantErr {
			if err == nil {
				t.Errorf("NewClient(%q) succeeded, want error", tt.addr)
			}
			continue
		}
		if err != nil || c.base != tt.wantBase {
			t.Errorf("NewClient(%q) = base %v, %v; want %q", tt.addr, c, err, tt.wantBase)
		}
	}
}
