package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/sys/userns"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/test/cluster"
)

// apiTimeout guards the API server tests' waits (failure guards only).
const apiTimeout = 2 * time.Minute

// startCluster starts a control plane (test/cluster) for this test, or
// skips it when SKIFF_CONTROLPLANE (make controlplane) is not set.
func startCluster(t *testing.T, e *Env) *cluster.Cluster {
	t.Helper()
	bin := os.Getenv("SKIFF_CONTROLPLANE")
	if bin == "" {
		t.Skip("SKIFF_CONTROLPLANE is not set: build the control plane with `make controlplane` (make e2e does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(e.Dir, "cluster"), Bin: bin, NodeNames: []string{nodeName}, Logf: t.Logf})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return c
}

// apiPod is a pod bound to the test node (no scheduler needed), without
// a service account token (skiff does not project tokens yet).
func apiPod(name string, grace int64, cmd string, vols ...v1.Volume) *v1.Pod {
	no := false
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			NodeName: nodeName, AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: busyboxImage, Command: []string{"sh", "-c", cmd}}},
			Volumes:    vols,
		},
	}
	if len(vols) > 0 {
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: vols[0].Name, MountPath: "/out"}}
	}
	return p
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitAPIPod polls the API's pod until cond holds.
func waitAPIPod(t *testing.T, cs kubernetes.Interface, name string, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: %s not reached: %v; last:\n%s", name, what, err, dump(last))
	}
	return last
}

// serverMinor is the API server's minor version.
func serverMinor(t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	if err != nil {
		t.Fatalf("API server minor version %q: %v", v.Minor, err)
	}
	return n
}

func waitAPIPodGone(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s still in the API server: %v", name, err)
	}
}

// TestJoinsAPIServer_H1_H10_H11_H15_A46: skiff with --kubeconfig registers
// a Ready Node with its Lease, runs a pod bound to it and reports its
// status, keeps a mirror pod for a static pod (re-created when deleted),
// runs a Deployment's pods placed by the scheduler, and on a deletion with
// grace 5 sends SIGTERM and then removes the pod from the API server.
func TestJoinsAPIServer_H1_H10_H11_H15_A46(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.WriteManifest(t, "static.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static, namespace: default}
spec:
  containers:
  - {name: app, image: %s, command: [sh, -c, "sleep 100000"]}
`, busyboxImage))
	e.StartAgent(t, AgentOptions{Args: apiAgentArgs(c)})
	t.Cleanup(func() { deleteAPIPods(t, cs) })

	// The Node: registered, Ready, with skiff's version; the Lease renewed.
	node := waitNodeReady(t, cs)
	if v := node.Status.NodeInfo.KubeletVersion; !strings.Contains(v, "skiff") {
		t.Errorf("kubeletVersion %q", v)
	}
	// KubeletInUserNamespace: reported as the kubelet 1.37 does, true or
	// false (a 1.34 API server drops the field).
	if v, want := node.Status.NodeInfo.RunningInUserNamespace, userns.RunningInUserNS(); (v == nil && serverMinor(t, cs) >= 35) || (v != nil && *v != want) {
		t.Errorf("runningInUserNamespace %v, want %t", v, want)
	}
	if node.Labels[v1.LabelHostname] != nodeName || node.Status.Capacity.Cpu().IsZero() {
		t.Errorf("node labels %v capacity %v", node.Labels, node.Status.Capacity)
	}
	// The runtime's handlers and features, as the kubelet reports them
	// (containerd 2 lists "" and runc with both features; 1.6 none).
	if f := e.RuntimeFeatures(t); f.UserNamespaces {
		var names []string
		for _, h := range node.Status.RuntimeHandlers {
			if h.Features != nil && h.Features.UserNamespaces != nil && *h.Features.UserNamespaces {
				names = append(names, h.Name)
			}
		}
		if !slices.Contains(names, "") || node.Status.Features == nil || node.Status.Features.SupplementalGroupsPolicy == nil {
			t.Errorf("runtimeHandlers %s features %s: want the default handler with user namespaces and the supplementalGroupsPolicy feature",
				dump(node.Status.RuntimeHandlers), dump(node.Status.Features))
		}
	} else if len(node.Status.RuntimeHandlers) != 0 || node.Status.Features != nil {
		t.Errorf("a runtime without features: runtimeHandlers %s features %s", dump(node.Status.RuntimeHandlers), dump(node.Status.Features))
	}
	lease, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		t.Fatalf("lease %v: %v", dump(lease), err)
	}
	firstRenew := lease.Spec.RenewTime.Time

	// A pod bound to the node runs, and its status reaches the API.
	termDir := filepath.Join(e.Dir, "term")
	if err := os.MkdirAll(termDir, 0o777); err != nil {
		t.Fatal(err)
	}
	dirType := v1.HostPathDirectory
	vol := v1.Volume{Name: "out", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: termDir, Type: &dirType}}}
	p := apiPod("web", 30, `trap 'echo TERM > /out/signal; exit 0' TERM; while true; do sleep 1; done`, vol)
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitAPIPod(t, cs, "web", "Running and Ready", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && podReady(p) })
	if got.Status.PodIP == "" || len(got.Status.ContainerStatuses) != 1 || !strings.HasPrefix(got.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Errorf("status:\n%s", dump(got))
	}
	// The kubelet's PodObservedGenerationTracking (GA in 1.35): the status
	// and the kubelet's conditions observe the pod's generation.
	if got.Generation == 0 || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("generation %d, status.observedGeneration %d", got.Generation, got.Status.ObservedGeneration)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == v1.PodReady && c.ObservedGeneration != got.Generation {
			t.Errorf("Ready condition observedGeneration %d, want %d", c.ObservedGeneration, got.Generation)
		}
	}

	// kubectl logs and exec reach the pod through the API server and
	// skiff's kubelet API (client certificates, SubjectAccessReview).
	if out := kubectl(t, c, "logs", "web"); out != "" {
		t.Logf("kubectl logs: %q", out)
	}
	if out := kubectl(t, c, "exec", "web", "--", "echo", "hello from exec"); strings.TrimSpace(out) != "hello from exec" {
		t.Errorf("kubectl exec: %q", out)
	}

	// A pod as a user writes it: its service account token (the API
	// server's kube-api-access projected volume, a TokenRequest bound to
	// the pod, the kube-root-ca.crt ConfigMap) and a ConfigMap in its
	// environment, both read from the API server.
	checkServiceAccountAndConfigMap(t, c, cs)

	// The static pod's mirror: present, re-created when deleted.
	mirrorName := PodName("static")
	mirror := waitAPIPod(t, cs, mirrorName, "mirror Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if mirror.Annotations["kubernetes.io/config.mirror"] == "" {
		t.Errorf("mirror pod without config.mirror:\n%s", dump(mirror))
	}
	if err := cs.CoreV1().Pods(namespace).Delete(ctx, mirrorName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, mirrorName, "mirror re-created", func(p *v1.Pod) bool { return p.UID != mirror.UID && p.DeletionTimestamp == nil })
	e.WaitForPod(t, mirrorName, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }, podStartTimeout) // the static pod kept running

	// The lease was renewed (every 10 s) and is owned by the Node (set
	// once the Node exists, as the kubelet's lease controller does).
	err = wait.PollUntilContextTimeout(ctx, time.Second, apiTimeout, true, func(ctx context.Context) (bool, error) {
		lease, err = cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime.After(firstRenew) && len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == node.UID, nil
	})
	if err != nil {
		t.Errorf("lease not renewed or not owned by the node: %v\n%s", err, dump(lease))
	}

	// A Deployment: the scheduler places 3 pods here, and they run.
	runDeployment(t, cs)

	// Deleted with grace 5: SIGTERM, then gone from the API server.
	grace := int64(5)
	if err := cs.CoreV1().Pods(namespace).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	waitAPIPodGone(t, cs, "web")
	if b, err := os.ReadFile(filepath.Join(termDir, "signal")); err != nil || strings.TrimSpace(string(b)) != "TERM" {
		t.Errorf("the container got no SIGTERM: %q %v", b, err)
	}
	e.WaitForPodGone(t, "web", podGoneTimeout)
}

// checkServiceAccountAndConfigMap runs a pod with the default service
// account token mounted and a ConfigMap key in its environment.
func checkServiceAccountAndConfigMap(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: namespace}, Data: map[string]string{"greeting": "hi from a configmap"}}
	if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount"
	p := apiPod("sa", 2, "cat "+sa+"/namespace; echo; echo $GREETING; test -s "+sa+"/token && echo token ok; grep -q CERTIFICATE "+sa+"/ca.crt && echo ca ok; sleep 100000")
	p.Spec.AutomountServiceAccountToken = nil
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "GREETING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "greeting"}}}}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitAPIPod(t, cs, "sa", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if len(got.Spec.Volumes) == 0 || got.Spec.Volumes[0].Projected == nil {
		t.Fatalf("the API server added no token volume:\n%s", dump(got))
	}
	var out string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, apiTimeout, true, func(context.Context) (bool, error) {
		out = kubectl(t, c, "logs", "sa")
		return strings.Contains(out, "ca ok"), nil
	})
	for _, want := range []string{"default", "hi from a configmap", "token ok", "ca ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("pod sa printed %q (%v), want %q in it", out, err, want)
		}
	}
}

// apiAgentArgs joins the agent to c. The kubelet API keeps its defaults,
// locked down as a cluster runs it (issue 29): client certificates of the
// cluster's CA (the kubeconfig's), tokens and authorization through the
// API server.
func apiAgentArgs(c *cluster.Cluster) []string {
	return []string{"--kubeconfig", c.Kubeconfig(nodeName)}
}

// kubectl runs the control plane's kubectl as the cluster admin and
// returns its output; a failure fails the test.
func kubectl(t *testing.T, c *cluster.Cluster, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"kubectl", "--kubeconfig", c.Kubeconfig("admin"), "-n", namespace}, args...)
	out, err := exec.CommandContext(ctx, os.Getenv("SKIFF_CONTROLPLANE"), full...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitNodeReady polls the test node until it is registered and Ready, and
// returns it.
func waitNodeReady(t *testing.T, cs kubernetes.Interface) *v1.Node {
	t.Helper()
	var node *v1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = n
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node not Ready: %v\n%s", err, dump(node))
	}
	return node
}

// runDeployment creates a Deployment of 3 replicas and waits until it is
// Available.
func runDeployment(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	replicas, no := int32(3), false
	labels := map[string]string{"app": "hello"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					AutomountServiceAccountToken: &no,
					Containers:                   []v1.Container{{Name: "app", Image: busyboxImage, Command: []string{"sh", "-c", "sleep 100000"}}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := cs.AppsV1().Deployments(namespace).Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = got
		for _, c := range got.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == v1.ConditionTrue && got.Status.AvailableReplicas == 3 {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		pods, _ := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
		t.Fatalf("deployment not Available: %v\n%s\npods:\n%s", err, dump(last), dump(pods))
	}
}

// TestAgentRestartKeepsAPIPodsReady_H1: skiff killed with SIGKILL and
// started again keeps every container of its API pods and never reports
// one of them not Ready (KEP-4781); an API server restart loses nothing
// (skiff re-lists and runs a pod created after it).
func TestAgentRestartKeepsAPIPodsReady_H1(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	args := AgentOptions{Args: apiAgentArgs(c)}
	e.StartAgent(t, args)
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	for _, name := range []string{"a", "b"} {
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod(name, 2, "sleep 100000"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]string{}
	for _, name := range []string{"a", "b"} {
		p := waitAPIPod(t, cs, name, "Ready", podReady)
		before[name] = p.Status.ContainerStatuses[0].ContainerID
	}
	// Watch every status the API server stores from here on.
	wctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var flips []string
	w, err := cs.CoreV1().Pods(namespace).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*v1.Pod); ok && !podReady(p) {
				mu.Lock()
				flips = append(flips, fmt.Sprintf("%s %s phase=%s", ev.Type, p.Name, p.Status.Phase))
				mu.Unlock()
			}
		}
	}()
	e.KillAgent(t)
	e.StartAgent(t, args)
	time.Sleep(15 * time.Second) // a status resync and a node status update
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod("c", 2, "sleep 100000"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "c", "Ready after the API server restart", podReady)
	stop()
	w.Stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, f := range flips {
		if !strings.Contains(f, " c ") {
			t.Errorf("a pod was reported not Ready: %s", f)
		}
	}
	for name, id := range before {
		p := waitAPIPod(t, cs, name, "Ready", podReady)
		if got := p.Status.ContainerStatuses[0].ContainerID; got != id || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("pod %s: container %s (restarts %d), want %s kept", name, got, p.Status.ContainerStatuses[0].RestartCount, id)
		}
	}
}

// deleteAPIPods deletes the Deployments and pods of the test namespace and
// waits until skiff has removed them, so that the test's agent stops with
// no pod left.
func deleteAPIPods(t *testing.T, cs kubernetes.Interface) {
	ctx := context.Background()
	_ = cs.AppsV1().Deployments(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	grace := int64(1)
	_ = cs.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{})
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range l.Items {
			if p.Annotations["kubernetes.io/config.mirror"] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("API pods left behind: %v", err)
	}
}
