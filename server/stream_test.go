package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// fakeStreamer is a runtime.Streamer that records its calls and answers
// with url (or err).
type fakeStreamer struct {
	mu    sync.Mutex
	url   string
	err   error
	calls []string
}

func (f *fakeStreamer) record(call string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.url, f.err
}

func (f *fakeStreamer) Exec(_ context.Context, id string, cmd []string, tty, stdin, stdout, stderr bool) (string, error) {
	return f.record(fmt.Sprintf("exec %s %q tty=%v in=%v out=%v err=%v", id, cmd, tty, stdin, stdout, stderr))
}

func (f *fakeStreamer) Attach(_ context.Context, id string, tty, stdin, stdout, stderr bool) (string, error) {
	return f.record(fmt.Sprintf("attach %s tty=%v in=%v out=%v err=%v", id, tty, stdin, stdout, stderr))
}

func (f *fakeStreamer) PortForward(_ context.Context, sandbox string, ports []int32) (string, error) {
	return f.record(fmt.Sprintf("portforward %s %v", sandbox, ports))
}

func (f *fakeStreamer) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

// fakeSandboxes maps pod UIDs to sandbox IDs.
type fakeSandboxes map[types.UID]string

func (f fakeSandboxes) PodSandboxID(_ context.Context, uid types.UID) (string, error) {
	if id, ok := f[uid]; ok {
		return id, nil
	}
	return "", fmt.Errorf("sandbox of pod %s: %w", uid, runtime.ErrNotFound)
}

// streamPod is default/shell (uid-s): app running, tty running with a
// terminal, setup an init container still running, creating waiting.
func streamPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shell", UID: "uid-s"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "setup"}},
			Containers:     []v1.Container{{Name: "app"}, {Name: "tty", TTY: true, Stdin: true}, {Name: "creating"}},
		},
		Status: v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{{Name: "setup", ContainerID: "containerd://cid-setup", State: running()}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", ContainerID: "containerd://cid-app", State: running()},
				{Name: "tty", ContainerID: "containerd://cid-tty", State: running()},
				{Name: "creating", State: waiting("ContainerCreating")},
			},
		},
	}
}

// streamBackend is the runtime's streaming server: it upgrades requests
// for /echo/... and then echoes the connection, and answers others with
// 418 and the path it got; each request's path and Authorization header
// are sent on seen.
func streamBackend(t *testing.T) (*httptest.Server, <-chan string) {
	t.Helper()
	seen := make(chan string, 10)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.RequestURI() + " auth=" + r.Header.Get("Authorization")
		if !strings.HasPrefix(r.URL.Path, "/echo/") {
			http.Error(w, "backend "+r.URL.Path, http.StatusTeapot)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	}))
	t.Cleanup(backend.Close)
	return backend, seen
}

// TestStreamingHandlers checks how /exec, /attach and /portForward resolve
// the pod, the container or sandbox and the streams, with the kubelet's
// codes and messages (H.25). Requests that get as far as the proxy are
// not upgrades here: the kubelet answers those 500 after asking the
// runtime.
func TestStreamingHandlers(t *testing.T) {
	const noUpgrade = "Upgrade request required\n"
	ws := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	tests := []struct {
		name      string
		method    string
		path      string
		header    http.Header
		streamErr error
		wantCode  int
		wantBody  string
		wantCall  string
	}{
		{name: "exec", method: "POST", path: "/exec/default/shell/app?command=sh&command=-c&command=echo+hi&input=1&output=1&error=1",
			wantCode: 500, wantBody: noUpgrade, wantCall: `exec cid-app ["sh" "-c" "echo hi"] tty=false in=true out=true err=true`},
		{name: "exec with tty drops stderr", method: "GET", path: "/exec/default/shell/app?command=sh&input=1&output=1&error=1&tty=1",
			wantCode: 500, wantBody: noUpgrade, wantCall: `exec cid-app ["sh"] tty=true in=true out=true err=false`},
		{name: "exec with the pod's uid", method: "POST", path: "/exec/default/shell/uid-s/app?command=ls&output=1",
			wantCode: 500, wantBody: noUpgrade, wantCall: `exec cid-app ["ls"] tty=false in=false out=true err=false`},
		{name: "exec in a running init container", method: "POST", path: "/exec/default/shell/setup?command=ls&output=1",
			wantCode: 500, wantBody: noUpgrade, wantCall: `exec cid-setup ["ls"] tty=false in=false out=true err=false`},
		{name: "exec with another uid", method: "POST", path: "/exec/default/shell/uid-old/app?command=ls&output=1",
			wantCode: 500, wantBody: "container not found (\"app\")\n"},
		{name: "exec without streams", method: "POST", path: "/exec/default/shell/app?command=ls",
			wantCode: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr\n"},
		{name: "exec in unknown pod", method: "POST", path: "/exec/default/nope/app?command=ls&output=1",
			wantCode: 404, wantBody: "pod does not exist\n"},
		{name: "exec in container not running", method: "POST", path: "/exec/default/shell/creating?command=ls&output=1",
			wantCode: 500, wantBody: "container not found (\"creating\")\n"},
		{name: "exec: runtime does not know the container", method: "POST", path: "/exec/default/shell/app?command=ls&output=1",
			streamErr: fmt.Errorf("exec in container cid-app: %w", runtime.ErrNotFound),
			wantCode:  404, wantBody: "exec in container cid-app: not found\n", wantCall: `exec cid-app ["ls"] tty=false in=false out=true err=false`},
		{name: "exec: runtime fails", method: "POST", path: "/exec/default/shell/app?command=ls&output=1",
			streamErr: errors.New("boom"),
			wantCode:  500, wantBody: "boom\n", wantCall: `exec cid-app ["ls"] tty=false in=false out=true err=false`},
		{name: "exec with PUT", method: "PUT", path: "/exec/default/shell/app?command=ls&output=1", wantCode: 405},
		{name: "attach takes tty from the spec", method: "POST", path: "/attach/default/shell/tty?input=1&output=1",
			wantCode: 500, wantBody: noUpgrade, wantCall: "attach cid-tty tty=true in=true out=true err=false"},
		{name: "attach ignores a tty the container has not", method: "GET", path: "/attach/default/shell/uid-s/app?output=1&error=1&tty=1",
			wantCode: 500, wantBody: noUpgrade, wantCall: "attach cid-app tty=false in=false out=true err=false"},
		{name: "attach to container not running", method: "POST", path: "/attach/default/shell/creating?output=1",
			wantCode: 500, wantBody: "container creating not found in pod shell_default\n"},
		{name: "port-forward over SPDY names no ports", method: "POST", path: "/portForward/default/shell",
			wantCode: 500, wantBody: noUpgrade, wantCall: "portforward sb-s []"},
		{name: "port-forward over WebSocket", method: "GET", path: "/portForward/default/shell/uid-s?port=80,8080&port=9090", header: ws,
			wantCode: 418, wantBody: "backend /stream/token\n", wantCall: "portforward sb-s [80 8080 9090]"},
		{name: "port-forward over WebSocket without ports", method: "GET", path: "/portForward/default/shell", header: ws,
			wantCode: 400, wantBody: "query parameter \"port\" is required\n"},
		{name: "port-forward over WebSocket with bad port", method: "GET", path: "/portForward/default/shell?port=0", header: ws,
			wantCode: 400, wantBody: "port \"0\" must be > 0\n"},
		{name: "port-forward to another uid", method: "POST", path: "/portForward/default/shell/uid-old",
			wantCode: 404, wantBody: "pod not found\n"},
		{name: "port-forward to unknown pod", method: "POST", path: "/portForward/default/nope",
			wantCode: 404, wantBody: "pod does not exist\n"},
		{name: "port-forward to pod without sandbox", method: "POST", path: "/portForward/other/nosandbox",
			wantCode: 500, wantBody: "pod not found (\"nosandbox_other\")\n"},
	}
	backend, _ := streamBackend(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streamer := &fakeStreamer{url: backend.URL + "/stream/token", err: tt.streamErr}
			pods := &fakePods{}
			other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "nosandbox", UID: "uid-n"}}
			pods.set(streamPod(), other)
			s := New(Config{Pods: pods, Streamer: streamer, Sandboxes: fakeSandboxes{"uid-s": "sb-s"}})
			req := httptest.NewRequest(tt.method, tt.path, nil)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.wantCode || (tt.wantBody != "" && rec.Body.String() != tt.wantBody) {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if got := streamer.lastCall(); got != tt.wantCall {
				t.Errorf("runtime call = %q, want %q", got, tt.wantCall)
			}
		})
	}
}

// TestStreamingNotAvailable checks the 501 of a server without a Streamer
// (the read-only port).
func TestStreamingNotAvailable(t *testing.T) {
	pods := &fakePods{}
	pods.set(streamPod())
	s := New(Config{Pods: pods})
	for _, path := range []string{"/exec/default/shell/app?command=ls&output=1", "/attach/default/shell/app?output=1", "/portForward/default/shell"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
		if rec.Code != http.StatusNotImplemented {
			t.Errorf("POST %s = %d, want 501", path, rec.Code)
		}
	}
}

// TestStreamProxiesUpgrade runs an upgrade through a real listener: the
// request reaches the runtime's URL (its path, without the client's query
// or Authorization header), and after the 101 bytes flow both ways.
func TestStreamProxiesUpgrade(t *testing.T) {
	backend, seen := streamBackend(t)
	pods := &fakePods{}
	pods.set(streamPod())
	streamer := &fakeStreamer{url: backend.URL + "/echo/tok123"}
	front := httptest.NewServer(New(Config{Pods: pods, Streamer: streamer}).Handler())
	defer front.Close()

	conn, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, "POST /exec/default/shell/app?command=sh&input=1&output=1&tty=1 HTTP/1.1\r\n"+
		"Host: node\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"+
		"Authorization: Bearer secret\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "SPDY/3.1" {
		t.Fatalf("response = %s %v, want 101 with Upgrade: SPDY/3.1", resp.Status, resp.Header)
	}
	if got := <-seen; got != "/echo/tok123 auth=" {
		t.Errorf("backend saw %q, want the session path without query or Authorization", got)
	}
	if _, err := io.WriteString(conn, "ping"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo = %q, %v; want ping", buf, err)
	}
	if got, want := streamer.lastCall(), `exec cid-app ["sh"] tty=true in=true out=true err=false`; got != want {
		t.Errorf("runtime call = %q, want %q", got, want)
	}
}
