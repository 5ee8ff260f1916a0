package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	kubeletrc "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/pki"
)

// fakeKubelet is a kubelet API on TLS that requires the shim's kubelet
// client certificate: /containerLogs answers "line2\nline3\n", /exec runs
// echo (kubelet's remotecommand server, SPDY), /portForward upgrades and
// echoes raw bytes. It records the requests it got.
type fakeKubelet struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*url.URL
}

func newFakeKubelet(t *testing.T, caPEM []byte) *fakeKubelet {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("shim CA: no PEM")
	}
	k := &fakeKubelet{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "line2\nline3\n")
	})
	exec := func(w http.ResponseWriter, r *http.Request) {
		opts, err := kubeletrc.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		kubeletrc.ServeExec(w, r, echoExecutor{}, r.PathValue("pod"), "", r.PathValue("container"), r.URL.Query()["command"],
			opts, time.Minute, 10*time.Second, remotecommandconsts.SupportedStreamingProtocols)
	}
	mux.HandleFunc("POST /exec/{ns}/{pod}/{container}", exec)
	mux.HandleFunc("GET /exec/{ns}/{pod}/{container}", exec)
	mux.HandleFunc("POST /portForward/{ns}/{pod}", rawEcho)
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusUnauthorized)
			return
		}
		sub := r.TLS.PeerCertificates[0].Subject
		if sub.CommonName != pki.KubeletClientCommonName || len(sub.Organization) != 1 || sub.Organization[0] != "system:masters" {
			http.Error(w, "not the shim: "+sub.String(), http.StatusForbidden)
			return
		}
		k.mu.Lock()
		k.reqs = append(k.reqs, r.URL)
		k.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	k.srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	return k
}

// last returns the last request the fake got.
func (k *fakeKubelet) last() *url.URL {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.reqs) == 0 {
		return &url.URL{}
	}
	return k.reqs[len(k.reqs)-1]
}

// echoExecutor writes its command line to stdout.
type echoExecutor struct{}

func (echoExecutor) ExecInContainer(_ context.Context, _, _, _ string, cmd []string, _ io.Reader, out, _ io.WriteCloser,
	_ bool, _ <-chan kubeletrc.TerminalSize, _ time.Duration) error {
	_, err := fmt.Fprintln(out, strings.Join(cmd, " "))
	return err
}

// rawEcho answers an upgrade with 101 and echoes what it reads.
func rawEcho(w http.ResponseWriter, r *http.Request) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
	if rw.Flush() == nil {
		_, _ = io.Copy(conn, rw)
	}
}

// TestPodSubresourcesProxy (issue 17, pods/log, exec, attach, portforward):
// the shim finds the kubelet of the pod's node (InternalIP, daemon
// endpoint port), authenticates with its kubelet client certificate, and
// proxies logs (with their parameters), SPDY and WebSocket exec and raw
// upgrades; container and scheduling errors are upstream's; nodes may not
// read pods/log.
func TestPodSubresourcesProxy(t *testing.T) {
	s, cfg, admin := startShimWith(t, Options{NodeName: "node-a"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dataDir := filepath.Dir(s.Kubeconfig)
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	kubelet := newFakeKubelet(t, caPEM)
	setupKubeletObjects(ctx, t, admin, kubelet)

	t.Run("17-log-proxied", func(t *testing.T) { testLogs(ctx, t, admin, kubelet) })
	t.Run("17-log-websocket", func(t *testing.T) {
		if got := websocketLogs(t, cfg, s.URL, "/api/v1/namespaces/kl/pods/p/log?container=c"); got != "line2\nline3\n" {
			t.Errorf("log over a WebSocket (binary.k8s.io) = %q; kubelet got %v", got, kubelet.last())
		}
	})
	t.Run("17-log-node-forbidden", func(t *testing.T) {
		bundle, err := pki.EnsureBundle(dataDir, nil)
		if err != nil {
			t.Fatal(err)
		}
		otherPath, err := pki.EnsureNodeKubeconfig(t.TempDir(), s.URL, bundle, "node-b")
		if err != nil {
			t.Fatal(err)
		}
		// Upstream's Node authorizer has no rule for pods/log: not even the
		// pod's own node may read it (nor exec); another node neither.
		for name, c := range map[string]kubernetes.Interface{"node-a": nodeClient(t, s.NodeKubeconfig), "node-b": nodeClient(t, otherPath)} {
			_, err := streamLogs(ctx, c, "p", &corev1.PodLogOptions{Container: "c"})
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s reads pods/log: %v, want 403", name, err)
			}
		}
	})
	t.Run("17-exec-websocket-and-spdy", func(t *testing.T) { testExec(ctx, t, cfg, admin) })
	t.Run("17-exec-unscheduled-400", func(t *testing.T) {
		err := admin.CoreV1().RESTClient().Post().Namespace("kl").Resource("pods").Name("pending").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: "c", Command: []string{"true"}, Stdout: true}, clientscheme.ParameterCodec).
			Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "pod pending does not have a host assigned") {
			t.Errorf("exec of unscheduled pod: %v, want 400 as upstream", err)
		}
	})
	t.Run("17-portforward-upgrade-proxied", func(t *testing.T) {
		got := rawUpgrade(t, cfg, s.URL, "/api/v1/namespaces/kl/pods/p/portforward?ports=8080", "ping\n")
		if got != "ping\n" {
			t.Errorf("echo through the shim: %q", got)
		}
		if u := kubelet.last(); u.Path != "/portForward/kl/p" || u.Query().Get("port") != "8080" {
			t.Errorf("kubelet got %s", u)
		}
	})
}

// setupKubeletObjects creates the Node (InternalIP and port of k), and in
// namespace kl pods p (containers c, d) on it and "pending" on no node.
func setupKubeletObjects(ctx context.Context, t *testing.T, admin kubernetes.Interface, k *fakeKubelet) {
	t.Helper()
	host, portStr, err := net.SplitHostPort(k.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-a.invalid"}, {Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kl"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := testPod("p", "node-a")
	p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
	p.Spec.Containers[0].Name, p.Spec.Containers[1].Name = "c", "d"
	pending := testPod("pending", "")
	pending.Spec.Containers[0].Name = "c"
	pending.Spec.SchedulerName = "elsewhere" // not placed on node-a (singlenode)
	for _, pod := range []*corev1.Pod{p, pending} {
		if _, err := admin.CoreV1().Pods("kl").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// testLogs checks pods/log against upstream's LogLocation and LogREST.
func testLogs(ctx context.Context, t *testing.T, admin kubernetes.Interface, k *fakeKubelet) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for _, tc := range []struct {
		name      string
		pod       string
		opts      corev1.PodLogOptions
		wantQuery string // the kubelet's query; "-": not reached
		wantPath  string
		wantBody  string
		wantErr   func(error) bool
		wantMsg   string
	}{
		{name: "tailLines", pod: "p", opts: corev1.PodLogOptions{Container: "c", TailLines: ptr.To[int64](2)},
			wantPath: "/containerLogs/kl/p/c", wantQuery: "tailLines=2", wantBody: "line2\nline3\n"},
		{name: "all parameters", pod: "p", opts: corev1.PodLogOptions{Container: "d", Follow: true, Previous: true, Timestamps: true,
			SinceTime: &since, LimitBytes: ptr.To[int64](10)}, wantPath: "/containerLogs/kl/p/d",
			wantQuery: "follow=true&limitBytes=10&previous=true&sinceTime=2026-01-02T03%3A04%3A05Z&timestamps=true", wantBody: "line2\nline3\n"},
		{name: "sinceSeconds", pod: "p", opts: corev1.PodLogOptions{Container: "c", SinceSeconds: ptr.To[int64](60)},
			wantPath: "/containerLogs/kl/p/c", wantQuery: "sinceSeconds=60", wantBody: "line2\nline3\n"},
		{name: "ambiguous container", pod: "p", wantQuery: "-", wantErr: apierrors.IsBadRequest,
			wantMsg: "a container name must be specified for pod p, choose one of: [c d]"},
		{name: "missing container", pod: "p", opts: corev1.PodLogOptions{Container: "nope"}, wantQuery: "-",
			wantErr: apierrors.IsBadRequest, wantMsg: "container nope is not valid for pod p"},
		{name: "negative tailLines", pod: "p", opts: corev1.PodLogOptions{Container: "c", TailLines: ptr.To[int64](-1)}, wantQuery: "-",
			wantErr: apierrors.IsInvalid, wantMsg: "tailLines"},
		{name: "missing pod", pod: "nope", wantQuery: "-", wantErr: apierrors.IsNotFound, wantMsg: `pods "nope" not found`},
		// Upstream's LogLocation gives no location for a pod without a
		// node: an empty answer (204), no error.
		{name: "unscheduled pod", pod: "pending", wantQuery: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := k.last()
			body, err := streamLogs(ctx, admin, tc.pod, &tc.opts)
			switch {
			case tc.wantErr != nil:
				if !tc.wantErr(err) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("err %v, want one with %q", err, tc.wantMsg)
				}
			case err != nil:
				t.Fatal(err)
			case string(body) != tc.wantBody:
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}
			got := k.last()
			if tc.wantQuery == "-" {
				if got != before {
					t.Errorf("kubelet reached: %s", got)
				}
				return
			}
			if got.Path != tc.wantPath || got.RawQuery != tc.wantQuery {
				t.Errorf("kubelet got %s?%s, want %s?%s", got.Path, got.RawQuery, tc.wantPath, tc.wantQuery)
			}
		})
	}
}

// streamLogs reads pod's log as kubectl does (Stream).
func streamLogs(ctx context.Context, c kubernetes.Interface, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
	r, err := c.CoreV1().Pods("kl").GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// testExec runs `echo hi` in p's container c with kubectl's executors:
// WebSocket (v5, translated to SPDY by the shim) and SPDY (proxied).
func testExec(ctx context.Context, t *testing.T, cfg *rest.Config, admin kubernetes.Interface) {
	u := admin.CoreV1().RESTClient().Post().Namespace("kl").Resource("pods").Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "c", Command: []string{"echo", "hi"}, Stdout: true}, clientscheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]remotecommand.Executor{"websocket": ws, "spdy": spdy} {
		var out bytes.Buffer
		if err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out}); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if out.String() != "echo hi\n" {
			t.Errorf("%s: stdout %q", name, out.String())
		}
	}
}

// dialUpgrade connects to the shim over TLS and sends, as the admin, an
// SPDY portforward upgrade request for path; it returns the connection
// (30 s deadline; the caller closes it), its reader and the response
// read from it (the caller closes its body).
func dialUpgrade(t *testing.T, cfg *rest.Config, shimURL, path string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cfg.CAData)
	host := strings.TrimPrefix(shimURL, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"+
		"X-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n", path, host, cfg.BearerToken)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		_ = conn.Close()
		t.Fatal(err)
	}
	return conn, br, resp
}

// websocketLogs reads path over a WebSocket of protocol binary.k8s.io,
// as upstream's "should support retrieving logs from the container over
// websockets" does, until the server closes it.
func websocketLogs(t *testing.T, cfg *rest.Config, shimURL, path string) string {
	t.Helper()
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wsc, err := websocket.NewConfig("wss"+strings.TrimPrefix(shimURL, "https")+path, "http://localhost")
	if err != nil {
		t.Fatal(err)
	}
	wsc.TlsConfig, wsc.Protocol = tlsConfig, []string{"binary.k8s.io"}
	if cfg.BearerToken != "" {
		wsc.Header = http.Header{"Authorization": {"Bearer " + cfg.BearerToken}}
	}
	ws, err := websocket.DialConfig(wsc)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var buf bytes.Buffer
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); errors.Is(err, io.EOF) {
			return buf.String()
		} else if err != nil {
			t.Fatalf("read: %v (so far %q)", err, buf.String())
		}
		buf.Write(msg)
	}
}

// rawUpgrade sends an SPDY upgrade request for path to the shim as the
// admin, writes send once the shim answers 101, and returns as many bytes
// as send has.
func rawUpgrade(t *testing.T, cfg *rest.Config, shimURL, path, send string) string {
	t.Helper()
	conn, br, resp := dialUpgrade(t, cfg, shimURL, path)
	defer conn.Close()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s %s", resp.Status, body)
	}
	if _, err := io.WriteString(conn, send); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(send))
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}
	return string(got)
}
