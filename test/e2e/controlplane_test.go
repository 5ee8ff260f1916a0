package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// controlPlaneArgs runs the agent with its own control plane on a free
// port, skipping the test without SKIFF_APISERVER (make build-apiserver).
// The shim's data (<root-dir>/apiserver) of an earlier test is removed
// first: the suite's root is shared.
func controlPlaneArgs(t *testing.T, e *Env) []string {
	t.Helper()
	bin := os.Getenv("SKIFF_APISERVER")
	if bin == "" {
		t.Skip("SKIFF_APISERVER is not set: build it with `make build-apiserver` (make e2e does)")
	}
	if err := os.RemoveAll(filepath.Join(e.s.Root, "apiserver")); err != nil {
		t.Fatal(err)
	}
	// A table left by an earlier test (one that did not clean up) would
	// be the new proxier's starting point: say so, and remove it.
	if out, err := exec.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput(); err == nil {
		t.Logf("a kube-proxy nftables table is left from before this test; deleting it:\n%s", out)
		_ = exec.Command("nft", "delete", "table", "ip", "kube-proxy").Run()
	}
	// The control plane's service proxy leaves its nftables table, as
	// kube-proxy does; the next test's would start from it.
	e.afterAgent = append(e.afterAgent, func() { _ = exec.Command("nft", "delete", "table", "ip", "kube-proxy").Run() })
	// Before the agent stops: the proxier's rules and the end of the
	// control plane's log, as they were when the test failed.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rules, _ := exec.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput()
		log, _ := os.ReadFile(filepath.Join(e.s.Root, "apiserver", "skiff-apiserver.log"))
		lines := strings.Split(string(log), "\n")
		lines = lines[max(0, len(lines)-200):]
		t.Logf("--- nft list table ip kube-proxy ---\n%s\n--- skiff-apiserver.log, last 200 lines ---\n%s", rules, strings.Join(lines, "\n"))
		t.Logf("--- skiff-apiserver's service proxy goroutines and metrics ---\n%s", proxyGoroutines(e.s.Root))
	})
	return []string{"--control-plane", "--control-plane-binary", bin, "--control-plane-port", strconv.Itoa(freeTCPPort(t))}
}

// proxyGoroutines is the stacks of the control plane's goroutines that
// are in its service proxy (k8s.io/kubernetes/pkg/proxy), from the API
// server's /debug/pprof/goroutine, and kube-proxy's metrics, or why they
// could not be had.
func proxyGoroutines(root string) string {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(root, "admin.kubeconfig"))
	if err != nil {
		return err.Error()
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dump, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/goroutine").Param("debug", "2").DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	var out []string
	if f, err := os.CreateTemp("", "skiff-apiserver-goroutines-*.txt"); err == nil {
		_, _ = f.Write(dump)
		_ = f.Close()
		out = append(out, "all goroutines: "+f.Name())
	}
	for _, g := range strings.Split(string(dump), "\n\n") {
		if strings.Contains(g, "k8s.io/kubernetes/pkg/proxy") || strings.Contains(g, "skiff-apiserver/proxy") {
			out = append(out, g)
		}
	}
	// kube-proxy's metrics: when it last synced, the changes it saw.
	metrics, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(l, "kubeproxy_") && !strings.Contains(l, "_bucket{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// startControlPlane starts `skiff agent --control-plane` (with extra
// agent flags) in a new Env and returns an admin client and kubeconfig
// once its node is Ready; it skips the test without kubectl
// (SKIFF_CONTROLPLANE).
func startControlPlane(t *testing.T, extra ...string) (kubernetes.Interface, string) {
	t.Helper()
	e := NewEnv(t)
	args := append(controlPlaneArgs(t, e), extra...)
	if os.Getenv("SKIFF_CONTROLPLANE") == "" {
		t.Skip("SKIFF_CONTROLPLANE is not set (kubectl): build it with `make controlplane` (make e2e does)")
	}
	e.StartAgent(t, AgentOptions{Args: args})
	cs, kc := adminClient(t, e)
	waitNodeReady(t, cs)
	return cs, kc
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// adminClient is a client of the agent's control plane as its admin,
// through <root-dir>/admin.kubeconfig.
func adminClient(t *testing.T, e *Env) (kubernetes.Interface, string) {
	t.Helper()
	path := filepath.Join(e.s.Root, "admin.kubeconfig")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("admin kubeconfig mode %v, want 0600", st.Mode().Perm())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg), path
}

// TestControlPlaneRunsPods_I: `skiff agent --control-plane` starts
// skiff-apiserver, writes <root-dir>/admin.kubeconfig, joins it as its
// Node (Ready), runs a pod created through the API (placed on the node by
// the shim: no nodeName) and reports its status; kubectl 1.34 (when
// SKIFF_CONTROLPLANE is set) lists it; a kill -9 of the shim restarts it
// and a kill -9 of the agent, started again, brings it back, both without
// touching the pod or losing objects; deleting the pod stops and removes
// it.
func TestControlPlaneRunsPods_I(t *testing.T) {
	e := NewEnv(t)
	args := controlPlaneArgs(t, e)
	e.StartAgent(t, AgentOptions{Args: args})
	cs, kubeconfig := adminClient(t, e)
	ctx := context.Background()
	waitNodeReady(t, cs)

	pod := apiPod("cp-app", 5, "echo hello-from-cp; exec sleep 100000")
	pod.Spec.NodeName = ""
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: namespace}, Data: map[string]string{"a": "b"}}
	if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && podReady(p) }
	waitAPIPod(t, cs, "cp-app", "Running and Ready", running)

	if k := os.Getenv("SKIFF_CONTROLPLANE"); k != "" {
		// kubectl through the shim: the table, then logs and exec, which
		// the shim proxies to the agent's kubelet API.
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"get", "pods"}, "cp-app"},
			{[]string{"logs", "cp-app"}, "hello-from-cp"},
			{[]string{"exec", "cp-app", "--", "sh", "-c", "echo $((40+2))"}, "42"},
		} {
			args := append([]string{"kubectl", "--kubeconfig", kubeconfig, "-n", namespace}, tc.args...)
			out, err := exec.Command(k, args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("kubectl %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
		}
	}

	// kill -9 of the shim: the agent restarts it; the pod keeps running.
	pidFile := filepath.Join(e.s.Root, "apiserver", "skiff-apiserver.pid")
	pid := readPid(t, pidFile)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		b, err := os.ReadFile(pidFile)
		if err != nil || strings.TrimSpace(string(b)) == strconv.Itoa(pid) {
			return false, nil
		}
		_, err = cs.CoreV1().Pods(namespace).Get(ctx, "cp-app", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("skiff-apiserver not back after kill -9: %v\n%s", err, e.agentLogTail())
	}
	p := waitAPIPod(t, cs, "cp-app", "Running and Ready", running)
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("the app restarted %d times across the shim's restart", n)
	}
	started := p.Status.ContainerStatuses[0].State.Running.StartedAt

	// kill -9 of the agent (the shim goes down with it), then a new one.
	e.KillAgent(t)
	e.StartAgent(t, AgentOptions{Args: args})
	waitNodeReady(t, cs)
	p = waitAPIPod(t, cs, "cp-app", "Running and Ready", running)
	if st := p.Status.ContainerStatuses[0].State.Running; st == nil || !st.StartedAt.Equal(&started) {
		t.Errorf("the app was restarted across the agent's restart: %s", dump(p.Status.ContainerStatuses))
	}
	if got, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, "kept", metav1.GetOptions{}); err != nil || got.Data["a"] != "b" {
		t.Errorf("configmap after the restarts: %v, %v", got, err)
	}

	if err := cs.CoreV1().Pods(namespace).Delete(ctx, "cp-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPodGone(t, cs, "cp-app")
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}
