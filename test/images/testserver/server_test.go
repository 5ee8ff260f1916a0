package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// lockedBuffer is an io.Writer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type harness struct {
	t     *testing.T
	srv   *server
	url   string
	exits chan int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, exits: make(chan int, 1)}
	h.srv = newServer(&lockedBuffer{}, func(code int) { h.exits <- code })
	ts := httptest.NewServer(h.srv.handler())
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

// do sends a request without following redirects and returns code and body.
func (h *harness) do(method, path string, hdr http.Header) (int, string, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, string(body), resp.Header
}

func TestHealthz(t *testing.T) {
	h := newHarness(t)
	if code, body, _ := h.do("GET", "/healthz", nil); code != 200 || body != "ok\n" {
		t.Fatalf("GET /healthz = %d %q, want 200 ok", code, body)
	}
}

func TestReadinessToggle(t *testing.T) {
	h := newHarness(t)
	steps := []struct {
		method, path string
		want         int
	}{
		{"GET", "/ready", 200},
		{"POST", "/ready?state=false", 200},
		{"GET", "/ready", 503},
		{"POST", "/ready?state=true", 200},
		{"GET", "/ready", 200},
		{"POST", "/ready?state=maybe", 400},
		{"GET", "/ready", 200},
	}
	for i, s := range steps {
		if code, _, _ := h.do(s.method, s.path, nil); code != s.want {
			t.Fatalf("step %d: %s %s = %d, want %d", i, s.method, s.path, code, s.want)
		}
	}
}

func TestReadyAfterBecomesReady(t *testing.T) {
	h := newHarness(t)
	h.srv.setReadyAfter(50 * time.Millisecond)
	if code, _, _ := h.do("GET", "/ready", nil); code != 503 {
		t.Fatalf("GET /ready before --ready-after = %d, want 503", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, _ := h.do("GET", "/ready", nil)
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /ready still %d after --ready-after elapsed", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReadyToggleOverridesReadyAfter(t *testing.T) {
	srv := newServer(io.Discard, func(int) {})
	srv.setReadyAfter(time.Hour)
	rec := httptest.NewRecorder()
	srv.handler().ServeHTTP(rec, httptest.NewRequest("POST", "/ready?state=true", nil))
	rec = httptest.NewRecorder()
	srv.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/ready", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /ready after POST state=true = %d, want 200", rec.Code)
	}
}

func TestStatusCode(t *testing.T) {
	h := newHarness(t)
	for path, want := range map[string]int{
		"/status/200": 200, "/status/302": 302, "/status/404": 404,
		"/status/500": 500, "/status/abc": 400, "/status/42": 400,
	} {
		if code, _, _ := h.do("GET", path, nil); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
}

func TestRedirect(t *testing.T) {
	h := newHarness(t)
	code, _, hdr := h.do("GET", "/redirect?to=/healthz", nil)
	if code != http.StatusFound || hdr.Get("Location") != "/healthz" {
		t.Fatalf("GET /redirect = %d Location %q, want 302 /healthz", code, hdr.Get("Location"))
	}
	if code, _, _ := h.do("GET", "/redirect", nil); code != 400 {
		t.Fatalf("GET /redirect without to = %d, want 400", code)
	}
}

func TestHeadersEchoed(t *testing.T) {
	h := newHarness(t)
	code, body, _ := h.do("GET", "/headers", http.Header{"X-Probe": {"liveness"}})
	if code != 200 {
		t.Fatalf("GET /headers = %d", code)
	}
	var got map[string][]string
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	if v := got["X-Probe"]; len(v) != 1 || v[0] != "liveness" {
		t.Fatalf("X-Probe echoed as %q, want [liveness]; body %s", v, body)
	}
	if len(got["Host"]) != 1 {
		t.Fatalf("Host missing from echo: %s", body)
	}
}

func TestExitEndpoint(t *testing.T) {
	h := newHarness(t)
	code, body, _ := h.do("POST", "/exit?code=7", nil)
	if code != 200 || !strings.Contains(body, "exiting with code 7") {
		t.Fatalf("/exit?code=7 = %d %q", code, body)
	}
	select {
	case got := <-h.exits:
		if got != 7 {
			t.Fatalf("exit code %d, want 7", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("/exit did not call exit")
	}
	if code, _, _ := h.do("GET", "/exit?code=x", nil); code != 400 {
		t.Fatalf("/exit?code=x = %d, want 400", code)
	}
}

func TestGRPCHealthToggle(t *testing.T) {
	h := newHarness(t)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		resp, err := h.srv.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatalf("health check: %v", err)
		}
		return resp.GetStatus()
	}
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("initial gRPC health %s, want SERVING", got)
	}
	if code, _, _ := h.do("POST", "/grpc-health?status=NOT_SERVING", nil); code != 200 {
		t.Fatalf("POST /grpc-health = %d", code)
	}
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("gRPC health after toggle %s, want NOT_SERVING", got)
	}
	if code, _, _ := h.do("POST", "/grpc-health?status=BROKEN", nil); code != 400 {
		t.Fatalf("POST /grpc-health?status=BROKEN = %d, want 400", code)
	}
}

func TestParseConfigFlagsAndEnv(t *testing.T) {
	env := map[string]string{
		"TESTSERVER_HTTP_PORT":      "9090",
		"TESTSERVER_EXIT_AFTER":     "2s",
		"TESTSERVER_IGNORE_SIGTERM": "true",
		"TESTSERVER_EXIT_CODE":      "4",
	}
	cfg, err := parseConfig([]string{"--exit-code", "5", "--termination-message", "bye", "--memory-hog-mib=16"},
		func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.httpPort != 9090 || cfg.tcpPort != 8081 || cfg.grpcPort != 8082 {
		t.Errorf("ports = %d/%d/%d, want 9090/8081/8082", cfg.httpPort, cfg.tcpPort, cfg.grpcPort)
	}
	if cfg.exitAfter != 2*time.Second || !cfg.ignoreSigterm || cfg.memoryHogMiB != 16 {
		t.Errorf("cfg = %+v", cfg)
	}
	if cfg.exitCode != 5 {
		t.Errorf("exit code %d: the flag must win over the env var", cfg.exitCode)
	}
	if cfg.terminationMessage != "bye" || cfg.terminationMessagePath != "/dev/termination-log" {
		t.Errorf("termination message %q at %q", cfg.terminationMessage, cfg.terminationMessagePath)
	}
}

func TestParseConfigRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"bad env duration": {env: map[string]string{"TESTSERVER_EXIT_AFTER": "soon"}},
		"bad env int":      {env: map[string]string{"TESTSERVER_HTTP_PORT": "http"}},
		"unknown flag":     {args: []string{"--nope"}},
		"stray argument":   {args: []string{"serve"}},
	} {
		if _, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }); err == nil {
			t.Errorf("%s: parseConfig succeeded, want error", name)
		}
	}
}

func TestAllocateTouchesMemory(t *testing.T) {
	b := allocate(3)
	if len(b) != 3<<20 {
		t.Fatalf("allocate(3) gave %d bytes", len(b))
	}
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 1 {
			t.Fatalf("page at %d not touched", i)
		}
	}
	if allocate(0) != nil {
		t.Fatal("allocate(0) must allocate nothing")
	}
}
