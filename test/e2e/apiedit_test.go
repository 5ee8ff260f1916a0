package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/test/cluster"
)

// TestAPIPodEditsAndStreams_H1_G7: an API pod gets the kubernetes
// service's variables (G.4). A running API pod takes the edits the
// API server allows, as under the kubelet: new labels reach its
// downwardAPI volume, and a new image restarts that container alone
// ("definition changed"). Through the API server, kubectl port-forward
// reaches the pod's port, kubectl attach -i its stdin and stdout, and the
// node proxy skiff's /metrics.
func TestAPIPodEditsAndStreams_H1_G7(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.StartAgent(t, AgentOptions{Args: apiAgentArgs(c)})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	waitNodeReady(t, cs)

	labels := v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}
	p := apiPod("edit", 1, "sleep 100000", labels)
	p.Labels = map[string]string{"app": "edit"}
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "web", Image: testserverImage, Command: []string{"/testserver"}})
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitAPIPod(t, cs, "edit", "Ready", podReady)

	// Service variables (G.4): the kubernetes service's, as for in-cluster
	// clients.
	if out := kubectl(t, c, "exec", "edit", "-c", "app", "--", "sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"); strings.TrimSpace(out) != "10.96.0.1:443" {
		t.Errorf("KUBERNETES_SERVICE_HOST:PORT = %q, want 10.96.0.1:443", out)
	}

	// Labels: the downwardAPI file follows them.
	if out := kubectl(t, c, "exec", "edit", "-c", "app", "--", "cat", "/out/labels"); out != `app="edit"` {
		t.Errorf("labels file %q, want app=\"edit\"", out)
	}
	kubectl(t, c, "label", "pod", "edit", "tier=web")
	pollKubectl(t, c, `labels file with tier="web"`, func(out string) bool { return strings.Contains(out, `tier="web"`) },
		"exec", "edit", "-c", "app", "--", "cat", "/out/labels")

	// Image: app restarts with the new image, web keeps running.
	kubectl(t, c, "set", "image", "pod/edit", "app="+testserverImage)
	after := waitAPIPod(t, cs, "edit", "app restarted with "+testserverImage, func(p *v1.Pod) bool {
		s := containerStatus(p, "app")
		return s != nil && s.RestartCount == 1 && s.Ready && strings.Contains(s.Image, "testserver") && podReady(p)
	})
	if b, a := containerStatus(before, "web"), containerStatus(after, "web"); a.ContainerID != b.ContainerID || a.RestartCount != 0 {
		t.Errorf("web: %s (restarts %d), want %s kept", a.ContainerID, a.RestartCount, b.ContainerID)
	}
	waitEvent(t, cs, "edit", "Killing", "Container app definition changed, will be restarted")

	// kubectl debug: an ephemeral container in web's PID namespace sees
	// testserver's process.
	kubectl(t, c, "debug", "edit", "--image="+busyboxImage, "--target=web", "-c", "dbg", "--", "sleep", "100000")
	waitAPIPod(t, cs, "edit", "ephemeral container dbg running", func(p *v1.Pod) bool {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "dbg" && s.State.Running != nil {
				return true
			}
		}
		return false
	})
	if out := kubectl(t, c, "exec", "edit", "-c", "dbg", "--", "ps", "-o", "args"); !strings.Contains(out, "/testserver") {
		t.Errorf("ps in the ephemeral container:\n%s\nwant web's /testserver (its PID namespace)", out)
	}

	// kubectl port-forward through the API server to testserver's :8080.
	checkPortForward(t, c, "edit", 8080)

	// /metrics through the API server's node proxy (H.25): the kubelet's
	// names, this pod's sandbox and its restarted container counted.
	metrics := kubectl(t, c, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics")
	for _, want := range []string{"\nkubelet_running_pods 1\n", `kubelet_node_name{node="` + nodeName + `"} 1`,
		`kubelet_started_containers_total{container_type="container"} 3`, `kubelet_started_containers_total{container_type="ephemeral_container"} 1`,
		`kubelet_runtime_operations_total{operation_type="run_podsandbox"} 1`, "kubelet_pod_start_sli_duration_seconds_count 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}

	// kubectl attach -i: stdin in, stdout back.
	att := apiPod("att", 1, `read line; echo "got:$line"`)
	att.Spec.RestartPolicy = v1.RestartPolicyNever
	att.Spec.Containers[0].Stdin, att.Spec.Containers[0].StdinOnce = true, true
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, att, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "att", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	out := kubectlStdin(t, c, "hello\n", "attach", "-i", "att", "-c", "app")
	if !strings.Contains(out, "got:hello") {
		t.Errorf("kubectl attach -i printed %q, want got:hello", out)
	}
	waitAPIPod(t, cs, "att", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
}

// pollKubectl runs kubectl until ok accepts its output.
func pollKubectl(t *testing.T, c *cluster.Cluster, what string, ok func(string) bool, args ...string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, apiTimeout, true, func(context.Context) (bool, error) {
		// Each run has its own timeout: the last output is a whole one.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		full := append([]string{"kubectl", "--kubeconfig", c.Kubeconfig("admin"), "-n", namespace}, args...)
		out, err := exec.CommandContext(ctx, os.Getenv("SKIFF_CONTROLPLANE"), full...).CombinedOutput()
		last = string(out)
		if err != nil {
			last += "\n" + err.Error()
		}
		return err == nil && ok(last), nil
	})
	if err != nil {
		t.Fatalf("kubectl %s: %s not seen: %v; last output:\n%s", strings.Join(args, " "), what, err, last)
	}
}

// kubectlStdin runs kubectl with stdin and returns its output.
func kubectlStdin(t *testing.T, c *cluster.Cluster, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"kubectl", "--kubeconfig", c.Kubeconfig("admin"), "-n", namespace}, args...)
	cmd := exec.CommandContext(ctx, os.Getenv("SKIFF_CONTROLPLANE"), full...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitEvent waits for an event about pod with reason and message.
func waitEvent(t *testing.T, cs kubernetes.Interface, pod, reason, message string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, nil
		}
		for _, ev := range l.Items {
			if ev.Reason == reason && ev.Message == message {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no event %s %q about %s: %v", reason, message, pod, err)
	}
}

// forwardingRE matches kubectl port-forward's "Forwarding from
// 127.0.0.1:41234 -> 8080".
var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)

// checkPortForward runs kubectl port-forward to pod's port and GETs
// testserver's /healthz through it.
func checkPortForward(t *testing.T, c *cluster.Cluster, pod string, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Getenv("SKIFF_CONTROLPLANE"), "kubectl", "--kubeconfig", c.Kubeconfig("admin"), "-n", namespace,
		"port-forward", "--address", "127.0.0.1", "pod/"+pod, fmt.Sprintf(":%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	local := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwardingRE.FindStringSubmatch(sc.Text()); m != nil {
				local <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var lport string
	select {
	case lport = <-local:
	case <-ctx.Done():
		t.Fatalf("kubectl port-forward never listened; stderr:\n%s", stderr.String())
	}
	resp, err := http.Get("http://127.0.0.1:" + lport + "/healthz")
	if err != nil {
		t.Fatalf("GET through kubectl port-forward: %v; stderr:\n%s", err, stderr.String())
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz through kubectl port-forward: %s", resp.Status)
	}
}

// TestKubectlTop_H1: with metrics-server registered in the aggregation
// layer, `kubectl top node` and `kubectl top pod` show skiff's node and
// pod, which metrics-server scrapes from skiff's /metrics/resource.
func TestKubectlTop_H1(t *testing.T) {
	ms := os.Getenv("SKIFF_METRICS_SERVER")
	if ms == "" {
		t.Skip("SKIFF_METRICS_SERVER is not set: build metrics-server with `make metricsserver` (make e2e does)")
	}
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.StartAgent(t, AgentOptions{Args: apiAgentArgs(c)})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	node := waitNodeReady(t, cs)
	var hostIP string
	for _, a := range node.Status.Addresses {
		if a.Type == v1.NodeInternalIP && hostIP == "" {
			hostIP = a.Address
		}
	}
	if err := c.StartMetricsServer(ctx, ms, hostIP); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod("top", 1, "sleep 100000"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "top", "Ready", podReady)
	// metrics-server needs two scrapes (15 s apart) for a cpu rate.
	pollKubectl(t, c, "the node's usage", func(out string) bool { return strings.Contains(out, nodeName) && strings.Contains(out, "%") },
		"top", "node", nodeName)
	pollKubectl(t, c, "the pod's usage", func(out string) bool { return regexp.MustCompile(`(?m)^top\s+\d+m\s+\d+Mi`).MatchString(out) },
		"top", "pod", "top")
}
