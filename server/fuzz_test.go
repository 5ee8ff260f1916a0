package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// The fuzz targets of the local API (and of the kubelet API, which serves
// the same handler behind Auth): each drives the real handler, built by
// New with the fakes of the package's ports, through httptest, with the
// query (and the log file) the fuzzer makes.

// serve sends method target?rawQuery to h and returns the recording.
func serve(h http.Handler, method, target, rawQuery string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Method, req.URL.RawQuery = method, rawQuery
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// logParams are the query parameters of /containerLogs.
var logParams = []string{"follow", "previous", "timestamps", "tailLines", "limitBytes", "sinceSeconds", "sinceTime", "stream"}

// FuzzContainerLogs: GET /containerLogs/{namespace}/{pod}/{container}
// with any query over any log file content. The handler never panics;
// it answers 200, or 400/422 with a message naming the parameter; it is
// deterministic (a fixed clock); the body has at most limitBytes bytes
// and at most tailLines lines, and, without timestamps, no more bytes
// than the log file.
// Run with: go test ./server/ -run '^$' -fuzz '^FuzzContainerLogs$' -fuzztime 60s
func FuzzContainerLogs(f *testing.F) {
	seedLog, err := os.ReadFile(filepath.Join("testdata", "logs", "app", "1.log"))
	if err != nil {
		f.Fatal(err)
	}
	for _, q := range []string{
		"", "tailLines=1", "tailLines=0&timestamps=true", "limitBytes=1", "limitBytes=5&tailLines=2",
		"sinceTime=2024-05-01T10:01:01Z", "sinceSeconds=1", "sinceSeconds=999999999999", "stream=Stderr", "stream=Stdout&follow=true",
		"previous=true", "follow=1&timestamps=T", "tailLines=-1", "tailLines=x", "limitBytes=0", "sinceSeconds=1&sinceTime=2024-05-01T10:01:01Z",
		"stream=both", "follow=maybe", "tailLines=9223372036854775807", "limitBytes=9223372036854775807", "sinceTime=2024-05-01T10:01:01+25:00",
	} {
		f.Add(q, seedLog)
	}
	f.Add("", []byte("2024-05-01T10:01:01Z stderr P a\n2024-05-01T10:01:01Z stdout P b\n2024-05-01T10:01:02.5Z stderr F c\nnot a line\n2024-05-01T10:01:03Z stdout F\n"))
	f.Add("timestamps=true", []byte("2024-05-01T10:01:01.123456789+02:00 stdout P:x partial without end"))
	root := f.TempDir()
	logPath := podlogs.ContainerLogPath(podlogs.PodDir(root, "default", "web", "uid-1"), "app", 1)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(logPath[:len(logPath)-len("1.log")]+"0.log", seedLog, 0o600); err != nil {
		f.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Date(2024, 5, 1, 10, 1, 2, 0, time.UTC))
	// The app container has exited: a followed log ends with the file.
	pods := &fakePods{pods: []*v1.Pod{webPod(terminated(1, "Error"))}}
	h := New(Config{Pods: pods, PodLogsDir: root, Clock: clk, LogPollInterval: time.Millisecond}).Handler()
	f.Fuzz(func(t *testing.T, rawQuery string, logData []byte) {
		if err := os.WriteFile(logPath, logData, 0o600); err != nil {
			t.Fatal(err)
		}
		rec := serve(h, http.MethodGet, "/containerLogs/default/web/app", rawQuery, nil)
		body := rec.Body.String()
		q, _ := url.ParseQuery(rawQuery)
		switch rec.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			if !slices.ContainsFunc(logParams, func(p string) bool { return strings.Contains(body, p) }) {
				t.Fatalf("%d %q names no parameter", rec.Code, body)
			}
			return
		default:
			t.Fatalf("?%s: status %d %q", rawQuery, rec.Code, body)
		}
		if again := serve(h, http.MethodGet, "/containerLogs/default/web/app", rawQuery, nil); again.Code != rec.Code || again.Body.String() != body {
			t.Fatalf("?%s: not deterministic: %q, then %d %q", rawQuery, body, again.Code, again.Body.String())
		}
		if n, err := strconv.ParseInt(q.Get("limitBytes"), 10, 64); err == nil && int64(len(body)) > n {
			t.Fatalf("?%s: %d bytes, limitBytes %d", rawQuery, len(body), n)
		}
		if n, err := strconv.ParseInt(q.Get("tailLines"), 10, 64); err == nil && int64(lineCount(body)) > n {
			t.Fatalf("?%s: %d lines, tailLines %d", rawQuery, lineCount(body), n)
		}
		if ts, _ := strconv.ParseBool(q.Get("timestamps")); !ts && len(body) > len(logData) {
			t.Fatalf("?%s: %d bytes out of a %d-byte log", rawQuery, len(body), len(logData))
		}
	})
}

func callCount(e *fakeExecer) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.calls)
}

// lineCount counts the lines of s, a final one without "\n" included.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// FuzzRun: POST /run/{namespace}/{pod}/{container} with any query. The
// handler never panics; it answers 200 with the Execer's result, having
// passed it the cmd (else command) parameters and the timeout in whole
// seconds, or 400 without calling it.
// Run with: go test ./server/ -run '^$' -fuzz '^FuzzRun$' -fuzztime 60s
func FuzzRun(f *testing.F) {
	for _, q := range []string{
		"cmd=sh&cmd=-c&cmd=echo+hi", "command=ls&timeout=5", "cmd=ls&command=x", "cmd=&cmd=x", "timeout=1",
		"cmd=ls&timeout=-1", "cmd=ls&timeout=2147483648", "cmd=ls&timeout=0x10", "cmd=%zz", "cmd=a;cmd=b",
	} {
		f.Add(q)
	}
	exec := &fakeExecer{res: runtime.ExecResult{Stdout: []byte("out"), ExitCode: 3}}
	h := New(Config{Exec: exec}).Handler()
	f.Fuzz(func(t *testing.T, rawQuery string) {
		before := callCount(exec)
		rec := serve(h, http.MethodPost, "/run/default/web/app", rawQuery, nil)
		q, _ := url.ParseQuery(rawQuery)
		called := callCount(exec) > before
		switch rec.Code {
		case http.StatusBadRequest:
			if called {
				t.Fatalf("?%s: 400 %q after calling the Execer", rawQuery, rec.Body.String())
			}
			return
		case http.StatusOK:
		default:
			t.Fatalf("?%s: status %d %q", rawQuery, rec.Code, rec.Body.String())
		}
		var res ExecResult
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || !bytes.Equal(res.Stdout, exec.res.Stdout) {
			t.Fatalf("?%s: body %q: %v", rawQuery, rec.Body.String(), err)
		}
		call := exec.lastCall()
		want := q["cmd"]
		if len(want) == 0 {
			want = q["command"]
		}
		if !called || !slices.Equal(call.cmd, want) || len(want) == 0 || want[0] == "" {
			t.Fatalf("?%s: Execer got %q, want %q", rawQuery, call.cmd, want)
		}
		if call.timeout < 0 || call.timeout%time.Second != 0 || call.timeout > (1<<31-1)*time.Second {
			t.Fatalf("?%s: timeout %v", rawQuery, call.timeout)
		}
	})
}

// FuzzEvents: GET /events?fieldSelector= with any selector, and the
// selector PodEventSelector builds for any pod (UTF-8 names). The handler never
// panics; it answers 200 with an EventList of the provider's events in
// their order, or 400; PodEventSelector's selector is accepted and
// selects exactly the events of that pod.
// Run with: go test ./server/ -run '^$' -fuzz '^FuzzEvents$' -fuzztime 60s
func FuzzEvents(f *testing.F) {
	for _, s := range []string{
		"", "involvedObject.namespace=default", "involvedObject.name=web,involvedObject.namespace=default", "involvedObject.uid==uid-3",
		"type!=Normal", "reason=BackOff,source=skiff", "nope=x", "a", "involvedObject.name=a\\,b", "=,=", "metadata.name in (e1)",
	} {
		f.Add(s, "default", "web", "uid-1")
	}
	f.Add("", "ns", "a,b=c\\d", "")
	f.Fuzz(func(t *testing.T, selector, ns, name, uid string) {
		events := append(testEvents(), podEvent("fuzz", ns, name, types.UID(uid), "", "Normal", "Fuzzed"))
		h := New(Config{Events: events}).Handler()
		rec := serve(h, http.MethodGet, "/events", url.Values{"fieldSelector": {selector}}.Encode(), nil)
		switch rec.Code {
		case http.StatusOK:
			got := eventNames(t, rec.Body.Bytes())
			if !isSubsequence(got, eventNamesOf(events)) {
				t.Fatalf("fieldSelector %q: items %v are not the provider's in order", selector, got)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("fieldSelector %q: status %d %q", selector, rec.Code, rec.Body.String())
		}
		if !utf8.ValidString(ns) || !utf8.ValidString(name) || !utf8.ValidString(uid) {
			return // names and UIDs are UTF-8 (apimachinery's selector parser turns invalid bytes after an escape into U+FFFD)
		}
		pod := PodEventSelector(ns, name, types.UID(uid))
		rec = serve(h, http.MethodGet, "/events", url.Values{"fieldSelector": {pod}}.Encode(), nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("PodEventSelector(%q, %q, %q) = %q: %d %q", ns, name, uid, pod, rec.Code, rec.Body.String())
		}
		var want []string
		for _, ev := range events {
			o := ev.InvolvedObject
			if o.Namespace == ns && o.Name == name && (uid == "" || string(o.UID) == uid) {
				want = append(want, ev.Name)
			}
		}
		if got := eventNames(t, rec.Body.Bytes()); !slices.Equal(got, want) {
			t.Fatalf("PodEventSelector(%q, %q, %q) = %q selects %v, want %v", ns, name, uid, pod, got, want)
		}
	})
}

func eventNames(t *testing.T, body []byte) []string {
	t.Helper()
	var list v1.EventList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return eventNamesOf(list.Items)
}

func eventNamesOf(events []v1.Event) []string {
	names := []string{}
	for _, ev := range events {
		names = append(names, ev.Name)
	}
	return names
}

// isSubsequence reports whether sub is all has, or some of it, in order.
func isSubsequence(sub, has []string) bool {
	i := 0
	for _, s := range has {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}
