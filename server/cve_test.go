package server

import (
	"bufio"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// readOnlyAttacks are the requests that write, exec or debug, sent to the
// read-only port: /run, the streaming endpoints, image pulls and
// removals, the profiles (CVE-2019-11248, kubernetes#81023: /debug/pprof
// on the kubelet's unauthenticated healthz port), the checkpoint API
// (CVE-2025-0426, kubernetes#130016: checkpoints through the read-only
// port filled the node's disk) and the kubelet's other debugging
// handlers (/logs/, /configz, /runningpods/, /cri/).
var readOnlyAttacks = []struct{ method, path string }{
	{http.MethodPost, "/run/default/web/app?cmd=id"},
	{http.MethodPost, "/exec/default/web/app?command=id&output=1"},
	{http.MethodGet, "/exec/default/web/app?command=id&output=1"},
	{http.MethodPost, "/exec/default/web/uid-1/app?command=id&output=1"},
	{http.MethodPost, "/attach/default/web/app?output=1"},
	{http.MethodPost, "/portForward/default/web"},
	{http.MethodGet, "/portForward/default/web/uid-1"},
	{http.MethodPost, "/images/pull?image=busybox"},
	{http.MethodDelete, "/images?image=busybox"},
	{http.MethodGet, "/debug/pprof/"},
	{http.MethodGet, "/debug/pprof/cmdline"},
	{http.MethodGet, "/debug/pprof/goroutine?debug=2"},
	{http.MethodPost, "/checkpoint/default/web/app"},
	{http.MethodGet, "/logs/"},
	{http.MethodGet, "/logs/../../etc/passwd"},
	{http.MethodGet, "/configz"},
	{http.MethodGet, "/runningpods/"},
	{http.MethodGet, "/cri/exec/token"},
	{http.MethodPost, "/pods"},
	{http.MethodPut, "/containerLogs/default/web/app"},
}

// TestReadOnlyPortRefusesWritesAndExec_CVE_2019_11248_CVE_2025_0426: the
// server as the read-only port is configured (no Exec, Streamer, Images
// or Profiling: node.newServing) answers every request that would write,
// exec, profile or checkpoint with 404, 405 or 501: nothing reaches the
// runtime. The e2e TestCVE_ReadOnlyPort_CVE_2019_11248_CVE_2025_0426
// checks the node's wiring of that configuration.
func TestReadOnlyPortRefusesWritesAndExec_CVE_2019_11248_CVE_2025_0426(t *testing.T) {
	srv := httptest.NewServer(New(Config{Pods: &fakePods{}}).Handler())
	defer srv.Close()
	for _, a := range readOnlyAttacks {
		code, body := get(t, srv, a.method, a.path)
		switch code {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		default:
			t.Errorf("read-only: %s %s = %d %.200q, want 404, 405 or 501", a.method, a.path, code, body)
		}
	}
}

// TestContainerLogsNeverFollowSymlink: a container that can write its
// log directory (a hostPath of /var/log) replaces its log with a symlink
// to a host file in the CRI format; /containerLogs (kubectl logs) refuses
// it, following or not, and the host file's content never reaches the
// response. No CVE: Aqua's "pod escape using log mounts" (kube-hunter
// KHV047), see docs/security-tests.md.
func TestContainerLogsNeverFollowSymlink(t *testing.T) {
	root := setupLogs(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("2024-05-01T10:01:01Z stdout F host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := podlogs.ContainerLogPath(podlogs.PodDir(root, "default", "web", "uid-1"), "app", 1)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, log); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{Pods: &fakePods{pods: []*v1.Pod{webPod(running())}}, PodLogsDir: root}).Handler())
	defer srv.Close()
	for _, q := range []string{"", "?follow=true", "?tailLines=1"} {
		code, body := get(t, srv, http.MethodGet, "/containerLogs/default/web/app"+q)
		if code != http.StatusInternalServerError || strings.Contains(body, "secret\n") || !strings.Contains(body, "is not a regular file") {
			t.Errorf("logs%s through a symlink = %d %q, want 500 naming the file, without its content", q, code, body)
		}
	}
}

// TestKubeletAPIPathConfusion: on top of the secure defaults (webhook
// authorization of each request by the subresource its path maps to), a
// caller allowed only the harmless subresources (stats, metrics, log,
// healthz, pods: a monitoring identity) dresses /run and /exec as one of
// them with dot segments, encoded or not, or a doubled slash. None runs a
// command: the path the filter authorizes is the path served, or the
// request is redirected to its clean path and authorized again. The
// class of the kubelet API's authorization bypasses (kubelet API
// attacks behind CVE-2018-1002105 and CVE-2020-8559 went through the API
// server; these go at the kubelet API directly).
func TestKubeletAPIPathConfusion(t *testing.T) {
	exec := &fakeExecer{res: runtime.ExecResult{Stdout: []byte("uid=0(root)\n")}}
	authn, err := NewAuthenticator(AuthnConfig{Anonymous: true, ClientCAs: x509.NewCertPool()})
	if err != nil {
		t.Fatal(err)
	}
	authz := &subresourceAuthorizer{allow: map[string]bool{"stats": true, "metrics": true, "log": true, "healthz": true, "pods": true}}
	h := (&Auth{Authenticator: authn, Authorizer: authz, NodeName: "node1"}).Wrap(
		New(Config{Pods: &fakePods{pods: []*v1.Pod{webPod(running())}}, Exec: exec}).Handler())
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{
		"/stats/../run/default/web/app?cmd=id",
		"/stats/%2e%2e/run/default/web/app?cmd=id",
		"/stats/..%2frun/default/web/app?cmd=id",
		"/stats/summary/../../run/default/web/app?cmd=id",
		"/metrics/../run/default/web/app?cmd=id",
		"/logs/../run/default/web/app?cmd=id",
		"/healthz/../run/default/web/app?cmd=id",
		"/pods/../run/default/web/app?cmd=id",
		"/pods/..;/run/default/web/app?cmd=id",
		"//run/default/web/app?cmd=id",
		"/run/default/web/app/../../../../stats/summary?cmd=id",
		"/stats/../exec/default/web/app?command=id&output=1",
	} {
		status, body := rawPost(t, srv.Listener.Addr().String(), path)
		if status == http.StatusOK || strings.Contains(body, "uid=0") {
			t.Errorf("POST %s = %d %.120q, want refused or redirected", path, status, body)
		}
	}
	if len(exec.calls) != 0 {
		t.Errorf("commands run: %v, want none", exec.calls)
	}
}

// rawPost sends POST path as written (no client-side cleaning) and
// returns the status and the start of the body.
func rawPost(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: node1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, string(body)
}
