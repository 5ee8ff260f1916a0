package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Issue 29: the kubelet API is shut by default, however skiff is started.
// Each test below fails on skiff before issue 29, whose kubelet API let
// anonymous requests through with AlwaysAllow.

// kubeletRequest is one request to the kubelet API.
type kubeletRequest struct{ method, path string }

func (r kubeletRequest) String() string { return r.method + " " + r.path }

// kubeletRequests are the requests an attacker makes first: the pod list,
// a command in a container (/run, and /exec as the API server's proxy
// sends it), its logs, a port-forward and the metrics.
func kubeletRequests(pod, container string) []kubeletRequest {
	p := namespace + "/" + pod
	return []kubeletRequest{
		{http.MethodGet, "/pods"},
		{http.MethodPost, "/run/" + p + "/" + container + "?cmd=id"},
		{http.MethodPost, "/exec/" + p + "/" + container + "?command=id&output=1&error=1"},
		{http.MethodGet, "/containerLogs/" + p + "/" + container},
		{http.MethodPost, "/portForward/" + p},
		{http.MethodGet, "/metrics"},
	}
}

// send sends r to base with hc: its status and body, or the error.
func send(hc *http.Client, base string, r kubeletRequest, header http.Header) (int, string, error) {
	req, err := http.NewRequest(r.method, base+r.path, nil)
	if err != nil {
		return 0, "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512)) // enough to see what leaked
	return resp.StatusCode, string(body), nil
}

// expectRefused checks that every request of reqs gets want (401: not
// authenticated, 403: not authorized) from who.
func expectRefused(t *testing.T, who string, hc *http.Client, base string, reqs []kubeletRequest, want int, header http.Header) {
	t.Helper()
	for _, r := range reqs {
		code, body, err := send(hc, base, r, header)
		if err != nil || code != want {
			t.Errorf("%s: %s = %d %q, %v; want %d", who, r, code, body, err, want)
		}
	}
}

// expectAllowed checks that who gets through to every request of reqs:
// 200 with the command's output for /run, 200 for the others but the
// streaming ones, which fail later (no stream upgrade) but never with 401
// or 403.
func expectAllowed(t *testing.T, who string, hc *http.Client, base string, reqs []kubeletRequest) {
	t.Helper()
	for _, r := range reqs {
		code, body, err := send(hc, base, r, nil)
		streaming := strings.HasPrefix(r.path, "/exec/") || strings.HasPrefix(r.path, "/portForward/")
		switch {
		case err != nil:
			t.Errorf("%s: %s: %v", who, r, err)
		case streaming && (code == http.StatusUnauthorized || code == http.StatusForbidden):
			t.Errorf("%s: %s = %d %q, want past authentication and authorization", who, r, code, body)
		case !streaming && code != http.StatusOK:
			t.Errorf("%s: %s = %d %q, want 200", who, r, code, body)
		case strings.HasPrefix(r.path, "/run/") && !strings.Contains(body, `"stdout"`):
			t.Errorf("%s: %s = %q, want the command's output", who, r, body)
		}
	}
}

// waitKubeletKnowsPod waits until r, sent by an allowed client, gets 200:
// a restarted agent serves the kubelet API before its API source has
// delivered the pods again (the kubelet's server does too), and a pod it
// does not know yet is "not found".
func waitKubeletKnowsPod(t *testing.T, hc *http.Client, base string, r kubeletRequest) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		code, body, err := send(hc, base, r, nil)
		return err == nil && code == http.StatusOK, fmt.Sprintf("%s = %d %q, %v; want 200", r, code, body, err)
	})
}

// bearer is the header of a bearer token.
func bearer(token string) http.Header {
	return http.Header{"Authorization": []string{"Bearer " + strings.TrimSpace(token)}}
}

// kubeletBase is the kubelet API's URL at host.
func kubeletBase(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// TestKubeletAPIShutWithKubeconfig_Issue29: joined with --kubeconfig and
// none of the kubelet API's flags, then again with a --config file that
// leaves authentication and authorization out: from another host, a
// request without credentials gets 401 everywhere; a client certificate
// of the cluster CA for a user the API server does not allow (Webhook),
// and a service account's token (TokenReview), get 403; the admin's
// client certificate gets through, and so does the API server's proxy
// (kubectl logs, exec).
func TestKubeletAPIShutWithKubeconfig_Issue29(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", c.Kubeconfig(nodeName)}})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	waitNodeReady(t, cs)
	if _, err := cs.CoreV1().Pods(namespace).Create(context.Background(), apiPod("victim", 1, "echo started; sleep 100000"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "victim", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	peer := newNetworkPeer(t)
	ca := loadCA(t, c.CAFile(), filepath.Join(c.Dir(), "ca.key"))
	token := kubectl(t, c, "create", "token", "default")
	admin := ca.clientCert(t, "kubernetes-admin", "system:masters")
	check := func(how string) {
		t.Helper()
		base, reqs := kubeletBase(peerHostIP, 10250), kubeletRequests("victim", "app")
		waitKubeletKnowsPod(t, peer.client(admin), base, reqs[1])
		expectRefused(t, how+", anonymous", peer.client(), base, reqs, http.StatusUnauthorized, nil)
		expectRefused(t, how+", alice", peer.client(ca.clientCert(t, "alice")), base, reqs, http.StatusForbidden, nil)
		expectRefused(t, how+", a service account token", peer.client(), base, reqs, http.StatusForbidden, bearer(token))
		expectAllowed(t, how+", the admin", peer.client(admin), base, reqs)
		if out := kubectl(t, c, "logs", "victim"); !strings.Contains(out, "started") {
			t.Errorf("%s: kubectl logs: %q", how, out)
		}
		if out := kubectl(t, c, "exec", "victim", "--", "echo", "hi"); strings.TrimSpace(out) != "hi" {
			t.Errorf("%s: kubectl exec: %q", how, out)
		}
	}
	check("--kubeconfig")

	e.StopAgent(t)
	file := filepath.Join(e.Dir, "config.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 110\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", c.Kubeconfig(nodeName), "--config", file}})
	check("--config without authentication")
}

// TestKubeletAPIShutWithControlPlane_Issue29: with --control-plane and
// none of the kubelet API's flags, the kubelet API listens on loopback
// only (another host's connection is refused); there, a request without
// credentials gets 401; a client certificate of the shim's CA for a user
// the shim does not allow, and a service account's token, get 403
// (Webhook, TokenReview through the shim); the shim's admin and the
// shim's own proxy (pods/log) get through.
func TestKubeletAPIShutWithControlPlane_Issue29(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: controlPlaneArgs(t, e)})
	cs, _ := adminClient(t, e)
	ctx := context.Background()
	p := apiPod("victim", 1, "echo started; sleep 100000")
	p.Spec.NodeName = ""
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	waitAPIPod(t, cs, "victim", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	peer := newNetworkPeer(t)
	reqs := kubeletRequests("victim", "app")

	for _, r := range reqs {
		if code, _, err := send(peer.client(), kubeletBase(peerHostIP, 10250), r, nil); err == nil {
			t.Errorf("another host: %s = %d, want the connection refused (the kubelet API on loopback only)", r, code)
		}
	}
	pki := filepath.Join(e.s.Root, "apiserver", "pki")
	ca := loadCA(t, filepath.Join(pki, "ca.crt"), filepath.Join(pki, "ca.key"))
	token := serviceAccountToken(t, cs)
	local := kubeletBase("127.0.0.1", 10250)
	expectRefused(t, "anonymous", httpsClient(nil), local, reqs, http.StatusUnauthorized, nil)
	expectRefused(t, "alice", httpsClient(nil, ca.clientCert(t, "alice")), local, reqs, http.StatusForbidden, nil)
	expectRefused(t, "a service account token", httpsClient(nil), local, reqs, http.StatusForbidden, bearer(token))
	expectAllowed(t, "the shim's admin", httpsClient(nil, ca.clientCert(t, "skiff-admin", "system:masters")), local, reqs)
	logs, err := cs.CoreV1().Pods(namespace).GetLogs("victim", &v1.PodLogOptions{Container: "app"}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "started") {
		t.Errorf("pods/log through the shim: %q, %v", logs, err)
	}
}

// serviceAccountToken is a token of the default service account.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "default", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("service account token: %v", err)
	}
	return tr.Status.Token
}

// TestKubeletAPIShutStaticOnly_Issue29: static pods only, with --port:
// without --client-ca-file the agent refuses to start, naming the flags;
// with it, another host's request without credentials gets 401, and a
// client certificate of that CA gets through (AlwaysAllow: the CA is the
// operator's, and no API server could be asked).
func TestKubeletAPIShutStaticOnly_Issue29(t *testing.T) {
	e := NewEnv(t)
	port := freeTCPPort(t)

	// A runtime that is not there: the flags are refused before it is
	// needed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.s.Bin, "agent", "--root-dir", filepath.Join(e.Dir, "refused"),
		"--pod-manifest-path", e.ManifestDir, "--container-runtime-endpoint", "unix://"+filepath.Join(e.Dir, "none.sock"),
		"--port", strconv.Itoa(port)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nobody could use the kubelet API") || !strings.Contains(string(out), "--client-ca-file") {
		t.Errorf("--port without --client-ca-file: %v\n%s\nwant a refusal naming --client-ca-file", err, out)
	}

	ca := newCA(t, e.Dir)
	e.WriteManifest(t, "victim.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: victim, namespace: default}
spec:
  containers:
  - {name: app, image: %s, command: [sh, -c, "echo started; sleep 100000"]}
`, busyboxImage))
	e.StartAgent(t, AgentOptions{Args: []string{"--port", strconv.Itoa(port), "--client-ca-file", ca.File}})
	e.WaitForPod(t, PodName("victim"), func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }, podStartTimeout)
	peer := newNetworkPeer(t)
	base, reqs := kubeletBase(peerHostIP, port), kubeletRequests(PodName("victim"), "app")
	expectRefused(t, "anonymous", peer.client(), base, reqs, http.StatusUnauthorized, nil)
	other := newCA(t, t.TempDir())
	expectRefused(t, "another CA's certificate", peer.client(other.clientCert(t, "admin")), base, reqs, http.StatusUnauthorized, nil)
	expectAllowed(t, "a certificate of --client-ca-file", peer.client(ca.clientCert(t, "admin")), base, reqs)
}
