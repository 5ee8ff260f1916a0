package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffnode/skiff/runtime"
)

// execCall is what fakeExecer was asked to run.
type execCall struct {
	ns, pod, container string
	cmd                []string
	timeout            time.Duration
}

// fakeExecer runs nothing: it records the call and answers with res or err.
// Pod default/web with container app exists; everything else wraps
// notFound.
type fakeExecer struct {
	res      runtime.ExecResult
	err      error
	notFound error

	mu    sync.Mutex
	calls []execCall
}

func (f *fakeExecer) Exec(_ context.Context, ns, pod, container string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, execCall{ns, pod, container, slices.Clone(cmd), timeout})
	f.mu.Unlock()
	if ns != "default" || pod != "web" || container != "app" {
		return nil, fmt.Errorf("container %q in pod %s/%s: %w", container, ns, pod, f.notFound)
	}
	if f.err != nil {
		return nil, f.err
	}
	res := f.res
	return &res, nil
}

func (f *fakeExecer) lastCall() execCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return execCall{}
	}
	return f.calls[len(f.calls)-1]
}

func TestRun(t *testing.T) {
	errAgentNotFound := errors.New("agent: not found")
	tests := []struct {
		name     string
		execer   *fakeExecer
		method   string
		path     string
		wantCode int
		wantBody string   // checked when not empty
		wantCall execCall // checked when wantCall.pod != ""
	}{
		{name: "ok", execer: &fakeExecer{res: runtime.ExecResult{Stdout: []byte("hi\n"), Stderr: []byte("warn\n")}},
			method: http.MethodPost, path: "/run/default/web/app?cmd=sh&cmd=-c&cmd=echo+hi",
			wantCode: 200, wantBody: `{"stdout":"aGkK","stderr":"d2Fybgo=","exitCode":0}` + "\n",
			wantCall: execCall{"default", "web", "app", []string{"sh", "-c", "echo hi"}, 0}},
		{name: "non-zero exit is a result", execer: &fakeExecer{res: runtime.ExecResult{ExitCode: 3}},
			method: http.MethodPost, path: "/run/default/web/app?cmd=false&timeout=5",
			wantCode: 200, wantBody: `{"stdout":null,"stderr":null,"exitCode":3}` + "\n",
			wantCall: execCall{"default", "web", "app", []string{"false"}, 5 * time.Second}},
		{name: "kubelet's command parameter", execer: &fakeExecer{},
			method: http.MethodPost, path: "/run/default/web/app?command=ls&command=/",
			wantCode: 200, wantCall: execCall{"default", "web", "app", []string{"ls", "/"}, 0}},
		{name: "unknown pod: 404 via runtime.ErrNotFound", execer: &fakeExecer{notFound: runtime.ErrNotFound},
			method: http.MethodPost, path: "/run/default/nope/app?cmd=true",
			wantCode: 404, wantBody: "container \"app\" in pod default/nope: not found\n"},
		{name: "unknown container: 404 via wrapped runtime.ErrNotFound", execer: &fakeExecer{notFound: fmt.Errorf("no such container: %w", runtime.ErrNotFound)},
			method: http.MethodPost, path: "/run/default/web/db?cmd=true",
			wantCode: 404, wantBody: "container \"db\" in pod default/web: no such container: not found\n"},
		{name: "foreign not-found error: 500", execer: &fakeExecer{notFound: errAgentNotFound},
			method: http.MethodPost, path: "/run/default/web/db?cmd=true", wantCode: 500},
		{name: "not running: 500 with the message", execer: &fakeExecer{err: errors.New(`container "app" of pod default/web is not running`)},
			method: http.MethodPost, path: "/run/default/web/app?cmd=true",
			wantCode: 500, wantBody: "container \"app\" of pod default/web is not running\n"},
		{name: "no command", execer: &fakeExecer{}, method: http.MethodPost, path: "/run/default/web/app",
			wantCode: 400, wantBody: "missing command: give it as repeated cmd query parameters\n"},
		{name: "empty command", execer: &fakeExecer{}, method: http.MethodPost, path: "/run/default/web/app?cmd=",
			wantCode: 400},
		{name: "bad timeout", execer: &fakeExecer{}, method: http.MethodPost, path: "/run/default/web/app?cmd=true&timeout=1m",
			wantCode: 400, wantBody: "invalid timeout \"1m\": must be a non-negative number of seconds\n"},
		{name: "negative timeout", execer: &fakeExecer{}, method: http.MethodPost, path: "/run/default/web/app?cmd=true&timeout=-1",
			wantCode: 400},
		{name: "GET not allowed", execer: &fakeExecer{}, method: http.MethodGet, path: "/run/default/web/app?cmd=true",
			wantCode: http.StatusMethodNotAllowed},
		{name: "container required", execer: &fakeExecer{}, method: http.MethodPost, path: "/run/default/web?cmd=true",
			wantCode: 404},
		{name: "empty container segment", execer: &fakeExecer{}, method: http.MethodPost, path: "/run/default/web/?cmd=true",
			wantCode: 404},
		{name: "no execer: 501", method: http.MethodPost, path: "/run/default/web/app?cmd=true",
			wantCode: http.StatusNotImplemented, wantBody: "command execution is not available on this server\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{}
			if tt.execer != nil {
				cfg.Exec = tt.execer
			}
			srv := httptest.NewServer(New(cfg).Handler())
			defer srv.Close()
			code, body := get(t, srv, tt.method, tt.path)
			if code != tt.wantCode || (tt.wantBody != "" && body != tt.wantBody) {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, code, body, tt.wantCode, tt.wantBody)
			}
			if tt.wantCall.pod == "" {
				return
			}
			if got := tt.execer.lastCall(); fmt.Sprint(got) != fmt.Sprint(tt.wantCall) {
				t.Errorf("Exec called with %+v, want %+v", got, tt.wantCall)
			}
		})
	}
}

func TestClientExec(t *testing.T) {
	ex := &fakeExecer{notFound: runtime.ErrNotFound, res: runtime.ExecResult{
		Stdout: []byte("out\x00\xff"), Stderr: []byte("err"), ExitCode: 42,
	}}
	srv := httptest.NewServer(New(Config{Exec: ex}).Handler())
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res, err := c.Exec(ctx, "default", "web", "app", []string{"sh", "-c", "echo 'a b' && exit 42"}, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "out\x00\xff" || string(res.Stderr) != "err" || res.ExitCode != 42 {
		t.Errorf("Exec = %+v, want binary-safe output and exit code 42", res)
	}
	want := execCall{"default", "web", "app", []string{"sh", "-c", "echo 'a b' && exit 42"}, 2 * time.Second}
	if got := ex.lastCall(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("server got %+v, want %+v (timeout rounded up)", got, want)
	}

	_, err = c.Exec(ctx, "default", "web", "db", []string{"true"}, 0)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound || !strings.Contains(err.Error(), `container "db"`) {
		t.Errorf("Exec(unknown container) = %v, want a 404 naming the container", err)
	}
	if _, err := c.Exec(ctx, "default", "web", "app", nil, 0); err == nil {
		t.Error("Exec(no command) succeeded, want an error")
	}
}

func TestExecResultJSON(t *testing.T) {
	var r ExecResult
	if err := json.Unmarshal([]byte(`{"stdout":"aGkK","stderr":"","exitCode":7}`), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "hi\n" || len(r.Stderr) != 0 || r.ExitCode != 7 {
		t.Errorf("decoded %+v", r)
	}
}
