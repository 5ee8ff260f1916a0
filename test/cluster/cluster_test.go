package cluster

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// controlPlane returns the kube-controlplane binary, or skips the test.
func controlPlane(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SKIFF_CONTROLPLANE")
	if os.Getenv("SKIFF_E2E") != "1" || bin == "" {
		t.Skip("control plane test disabled: set SKIFF_E2E=1 and SKIFF_CONTROLPLANE=$(make controlplane); " +
			"etcd from test/setup.sh must be on PATH")
	}
	return bin
}

// TestControlPlane starts the control plane, has the controller manager
// make a Deployment's Pod, restarts the API server and finds the Pod again.
func TestControlPlane(t *testing.T) {
	bin := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, Config{Dir: t.TempDir(), Bin: bin, NodeNames: []string{"node-a"}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(began).Round(time.Millisecond))
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()

	createDeployment(ctx, t, c.Client())
	pod := waitForPod(ctx, t, c.Client())
	if pod.Spec.NodeName != "" || pod.Status.Phase != v1.PodPending {
		t.Errorf("pod %s: node %q, phase %q; want unscheduled and Pending (there is no node)",
			pod.Name, pod.Spec.NodeName, pod.Status.Phase)
	}
	checkNodeIdentity(ctx, t, c, "node-a")
	checkKubectl(t, bin, c.Kubeconfig("admin"))

	began = time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("RestartAPIServer took %v", time.Since(began).Round(time.Millisecond))
	if again := waitForPod(ctx, t, c.Client()); again.UID != pod.UID {
		t.Errorf("after the restart: pod %s (%s), want %s (%s)", again.Name, again.UID, pod.Name, pod.UID)
	}
}

func createDeployment(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	labels := map[string]string{"app": "smoke"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "x"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
}

// waitForPod waits for the one pod of the smoke Deployment.
func waitForPod(ctx context.Context, t *testing.T, cs kubernetes.Interface) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=smoke"})
		if err == nil && len(list.Items) == 1 {
			return &list.Items[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no pod of the smoke deployment: %v (list error %v, list %v)", ctx.Err(), err, list)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkNodeIdentity checks that the node's kubeconfig authenticates as
// system:node:<name> in system:nodes.
func checkNodeIdentity(ctx context.Context, t *testing.T, c *Cluster, node string) {
	t.Helper()
	rc, err := c.RESTConfig(node)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review as %s: %v", node, err)
	}
	u := review.Status.UserInfo
	if want := "system:node:" + node; u.Username != want || !slices.Contains(u.Groups, "system:nodes") {
		t.Errorf("node kubeconfig authenticates as %q %v, want %q in system:nodes", u.Username, u.Groups, want)
	}
}

// checkKubectl runs the binary's kubectl against the cluster.
func checkKubectl(t *testing.T, bin, kubeconfig string) {
	t.Helper()
	out, err := exec.Command(bin, "kubectl", "--kubeconfig", kubeconfig, "get", "deployments", "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "deployment.apps/smoke" {
		t.Errorf("kubectl get deployments: %v, output %q", err, out)
	}
}
