package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/skiffnode/skiff/server"
)

// criStreams is a fake CRI streaming server speaking the kubelet's
// WebSocket protocols with apimachinery's own server side (wsstream), as
// containerd's does: /exec/ and /attach/ run a fake process that reads a
// line of stdin, answers it upper-cased on stdout, writes "warning" on
// stderr, checks a resize if resize is set, and exits with code;
// /portforward/ echoes the forwarded port's bytes.
type criStreams struct {
	code   int
	resize string // the resize message expected before the line, "" for none
	mu     sync.Mutex
	errs   []string
}

func (f *criStreams) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *criStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/portforward/") {
		f.portForward(w, r)
		return
	}
	// The runtime opens stderr only when the session has it (see
	// recordingStreamer).
	stderr := r.URL.Query().Get("stderr") == "true"
	errCh := wsstream.IgnoreChannel
	if stderr {
		errCh = wsstream.WriteChannel
	}
	rw := wsstream.ReadChannel
	ch := []wsstream.ChannelType{rw, wsstream.WriteChannel, errCh, wsstream.WriteChannel, rw}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{"v4.channel.k8s.io": {Binary: true, Channels: ch}})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		f.fail("open: %v", err)
		return
	}
	defer func() { _ = conn.Close() }()
	_, _ = streams[1].Write(nil) // the kubelet's "connected" message
	if f.resize != "" {
		buf := make([]byte, 100)
		n, _ := streams[4].Read(buf)
		if got := string(buf[:n]); got != f.resize {
			f.fail("resize = %q, want %q", got, f.resize)
		}
	}
	line, err := bufio.NewReader(streams[0]).ReadString('\n')
	if err != nil {
		f.fail("read stdin: %v", err)
	}
	_, _ = io.WriteString(streams[1], strings.ToUpper(line))
	if stderr {
		_, _ = io.WriteString(streams[2], "warning\n")
	}
	st := metav1.Status{Status: metav1.StatusSuccess}
	if f.code != 0 {
		st = metav1.Status{Status: metav1.StatusFailure, Reason: "NonZeroExitCode", Message: "command terminated with non-zero exit code",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: fmt.Sprint(f.code)}}}}
	}
	body, _ := json.Marshal(st)
	_, _ = streams[3].Write(body)
}

func (f *criStreams) portForward(w http.ResponseWriter, r *http.Request) {
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"v4.channel.k8s.io": {Binary: true, Channels: []wsstream.ChannelType{wsstream.ReadWriteChannel, wsstream.WriteChannel}},
	})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		f.fail("open: %v", err)
		return
	}
	defer func() { _ = conn.Close() }()
	port := binary.LittleEndian.AppendUint16(nil, 8080)
	_, _ = streams[0].Write(port)
	_, _ = streams[1].Write(port)
	_, _ = io.Copy(streams[0], streams[0])
}

// recordingStreamer is a runtime.Streamer pointing at a criStreams server;
// the URL tells it whether the session has stderr.
type recordingStreamer struct {
	base  string
	mu    sync.Mutex
	calls []string
}

func (s *recordingStreamer) add(call, path string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	return s.base + path, nil
}

func (s *recordingStreamer) Exec(_ context.Context, id string, cmd []string, tty, stdin, stdout, stderr bool) (string, error) {
	return s.add(fmt.Sprintf("exec %s %q tty=%v in=%v out=%v err=%v", id, cmd, tty, stdin, stdout, stderr), "/exec/t?stderr="+fmt.Sprint(stderr))
}

func (s *recordingStreamer) Attach(_ context.Context, id string, tty, stdin, stdout, stderr bool) (string, error) {
	return s.add(fmt.Sprintf("attach %s tty=%v in=%v out=%v err=%v", id, tty, stdin, stdout, stderr), "/attach/t?stderr="+fmt.Sprint(stderr))
}

func (s *recordingStreamer) PortForward(_ context.Context, sandbox string, ports []int32) (string, error) {
	return s.add(fmt.Sprintf("portforward %s %v", sandbox, ports), "/portforward/t")
}

type oneSandbox string

func (s oneSandbox) PodSandboxID(context.Context, types.UID) (string, error) { return string(s), nil }

// streamingAgent serves an agent API with streaming on a unix socket
// (the CLI's default) and returns its --server address.
func streamingAgent(t *testing.T, cri *criStreams, streamer *recordingStreamer) string {
	t.Helper()
	backend := httptest.NewServer(cri)
	t.Cleanup(backend.Close)
	streamer.base = backend.URL
	shell := runningPod("shell", "app")
	shell.Spec.Containers = append(shell.Spec.Containers, v1.Container{Name: "term", TTY: true, Stdin: true})
	for i := range shell.Status.ContainerStatuses {
		shell.Status.ContainerStatuses[i].ContainerID = "containerd://cid-" + shell.Status.ContainerStatuses[i].Name
	}
	shell.Status.ContainerStatuses = append(shell.Status.ContainerStatuses,
		v1.ContainerStatus{Name: "term", ContainerID: "containerd://cid-term", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
	noID := runningPod("noid", "app")
	f := &fakeAgent{pods: []*v1.Pod{shell, noID}}
	srv := server.New(server.Config{Pods: f, Streamer: streamer, Sandboxes: oneSandbox("sb-1")})
	sock := filepath.Join(t.TempDir(), "skiff.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeUnix(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for range 200 {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sock
}

// runCLI runs skiff with stdin and returns stdout, stderr and the error.
func runCLI(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetIn(stdin)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return stdout.String(), stderr.String(), err
}

// TestInteractiveSessions runs `skiff exec -i/-it` and `skiff attach`
// through the agent's streaming endpoints to a fake CRI streaming server
// (H.25): the streams asked of the runtime, the output, and the exit code.
func TestInteractiveSessions(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantCall   string
		wantStdout string
		wantStderr string
		wantErr    string
		wantCode   int
	}{
		{name: "exec -i", args: []string{"exec", "-i", "shell", "-c", "app", "--", "cat"}, code: 7,
			wantCall:   `exec cid-app ["cat"] tty=false in=true out=true err=true`,
			wantStdout: "HELLO\n", wantStderr: "warning\n", wantCode: 7},
		{name: "exec -it without a terminal", args: []string{"exec", "-it", "shell", "-c", "term", "--", "sh"},
			wantCall:   `exec cid-term ["sh"] tty=false in=true out=true err=true`,
			wantStdout: "HELLO\n", wantStderr: "Unable to use a TTY - input is not a terminal or the right kind of file\nwarning\n"},
		{name: "attach to a container with a terminal", args: []string{"attach", "-i", "shell", "-c", "term"},
			wantCall: "attach cid-term tty=true in=true out=true err=false", wantStdout: "HELLO\n"},
		{name: "attach -t to a container without one", args: []string{"attach", "-it", "shell"},
			wantCall:   "attach cid-app tty=false in=true out=true err=true",
			wantStdout: "HELLO\n", wantStderr: "Defaulted container \"app\" out of: app, term, init (init)\n" +
				"error: Unable to use a TTY - container app did not allocate one\nwarning\n"},
		{name: "refused by the agent", args: []string{"exec", "-i", "noid", "-c", "app", "--", "cat"},
			wantErr: `container not found ("app")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cri := &criStreams{code: tt.code}
			streamer := &recordingStreamer{}
			sock := streamingAgent(t, cri, streamer)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			args := tt.args
			if i := slices.Index(args, "--"); i >= 0 {
				args = slices.Concat(args[:i], []string{"--server", sock}, args[i:])
			} else {
				args = append(args, "--server", sock)
			}
			stdout, stderr, err := runCLI(t, ctx, strings.NewReader("hello\n"), args...)
			var exit *exitCodeError
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
			case tt.wantCode != 0:
				if !errors.As(err, &exit) || exit.code != tt.wantCode {
					t.Errorf("err = %v, want exit code %d", err, tt.wantCode)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			}
			if stdout != tt.wantStdout || stderr != tt.wantStderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout, stderr, tt.wantStdout, tt.wantStderr)
			}
			var wantCalls []string
			if tt.wantCall != "" {
				wantCalls = []string{tt.wantCall}
			}
			if fmt.Sprint(streamer.calls) != fmt.Sprint(wantCalls) {
				t.Errorf("runtime calls %q, want %q", streamer.calls, wantCalls)
			}
			if len(cri.errs) > 0 {
				t.Errorf("streaming server: %v", cri.errs)
			}
		})
	}
}

// TestSessionResize checks that terminal sizes go out as the kubelet's
// resize messages before the session's input.
func TestSessionResize(t *testing.T) {
	cri := &criStreams{resize: `{"Width":120,"Height":40}`}
	streamer := &recordingStreamer{}
	sock := streamingAgent(t, cri, streamer)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := dialChannels(ctx, sock, "/exec/default/shell/app", map[string][]string{"command": {"sh"}, "input": {"1"}, "output": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	sizes := make(chan terminalSize, 1)
	sizes <- terminalSize{Width: 120, Height: 40}
	close(sizes)
	// The input follows once the fake has seen the resize.
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = io.WriteString(pw, "hi\n")
	}()
	defer func() { _ = pw.Close() }()
	var stdout, stderr bytes.Buffer
	if err := runSession(ctx, conn, sessionIO{stdin: pr, stdout: &stdout, stderr: &stderr, sizes: sizes}); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "HI\n" || len(cri.errs) > 0 {
		t.Errorf("stdout %q, streaming server: %v", stdout.String(), cri.errs)
	}
}

// TestSessionResult checks how a v4 status becomes the command's result.
func TestSessionResult(t *testing.T) {
	tests := []struct {
		status string
		want   string
	}{
		{`{"status":"Success"}`, "<nil>"},
		{`{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"42"}]}}`, "command terminated with exit code 42"},
		{`{"status":"Failure","reason":"InternalError","message":"container not running"}`, "container not running"},
		{``, "the session ended without an exit status"},
		{`nonsense`, "decode exit status"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(sessionResult([]byte(tt.status))); !strings.Contains(got, tt.want) {
			t.Errorf("sessionResult(%s) = %s, want %s", tt.status, got, tt.want)
		}
	}
}

// safeBuffer is a bytes.Buffer safe for a writer and a reader at once.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPortForward forwards a local port to the fake pod's port 8080 and
// echoes through it (H.25).
func TestPortForward(t *testing.T) {
	cri := &criStreams{}
	streamer := &recordingStreamer{}
	sock := streamingAgent(t, cri, streamer)
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCmd()
	var stdout, stderr safeBuffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"port-forward", "shell", ":8080", "--address", "127.0.0.1", "--server", sock})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("port-forward: %v", err)
		}
	}()
	re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 8080\n`)
	var addr string
	for range 500 {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if addr == "" {
		t.Fatalf("no Forwarding line: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "ping"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo = %q, %v", buf, err)
	}
	streamer.mu.Lock()
	calls := fmt.Sprint(streamer.calls)
	streamer.mu.Unlock()
	if calls != "[portforward sb-1 [8080]]" {
		t.Errorf("runtime calls %s, want the sandbox and port 8080", calls)
	}
}

// TestParsePortPairs checks kubectl's port syntax.
func TestParsePortPairs(t *testing.T) {
	tests := []struct {
		args    []string
		want    []portPair
		wantErr bool
	}{
		{args: []string{"5000"}, want: []portPair{{5000, 5000}}},
		{args: []string{"8888:5000", ":80", "0:81"}, want: []portPair{{8888, 5000}, {0, 80}, {0, 81}}},
		{args: []string{"8888:"}, wantErr: true},
		{args: []string{"x:80"}, wantErr: true},
		{args: []string{"70000"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := parsePortPairs(tt.args)
		if (err != nil) != tt.wantErr || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("parsePortPairs(%q) = %v, %v; want %v (error %v)", tt.args, got, err, tt.want, tt.wantErr)
		}
	}
}
