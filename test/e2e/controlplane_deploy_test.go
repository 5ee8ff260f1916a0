package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// deployManifest is a Deployment of busybox pods that stop at once on
// SIGTERM (grace 1) and need no service account token.
const deployManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[2]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: ` + busyboxImage + `
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// cpKubectl runs the control plane's kubectl against kubeconfig (stdin
// may be empty) and returns its output; a failure fails the test.
func cpKubectl(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	out, err := cpKubectlErr(kubeconfig, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// cpKubectlErr is cpKubectl for a command that may fail: its output and
// error.
func cpKubectlErr(kubeconfig, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append([]string{"kubectl", "--kubeconfig", kubeconfig, "-n", namespace}, args...)
	cmd := exec.CommandContext(ctx, os.Getenv("SKIFF_CONTROLPLANE"), full...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestControlPlaneDeployment_J1_J2: against `skiff agent --control-plane`,
// a Deployment applied with kubectl 1.34 runs its pods on the node (owned
// by a ReplicaSet with controller and blockOwnerDeletion), scales up and
// down, rolls to a new template (a new ReplicaSet, the old one at 0), and
// is deleted with each cascade mode: foreground (kubectl --wait returns
// once the ReplicaSets and pods are gone), background (they go after it),
// orphan (the ReplicaSet loses its owner and the pods keep running).
func TestControlPlaneDeployment_J1_J2(t *testing.T) {
	cs, kc := startControlPlane(t)

	cpKubectl(t, kc, fmt.Sprintf(deployManifest, "web", 2), "apply", "-f", "-")
	cpKubectl(t, kc, "", "rollout", "status", "deployment/web", "--timeout=2m")
	first := waitDeploymentPods(t, cs, "web", 2)
	rs := ownerOf(t, first[0], "ReplicaSet")
	if d := ownerOfRS(t, cs, rs.Name); d.Name != "web" || d.Controller == nil || !*d.Controller {
		t.Errorf("replicaset %s owner %+v, want the Deployment web as controller", rs.Name, d)
	}

	// Scale up, then down: the extra pods stop on the node and leave.
	cpKubectl(t, kc, "", "scale", "deployment/web", "--replicas=3")
	waitDeploymentPods(t, cs, "web", 3)
	cpKubectl(t, kc, "", "scale", "deployment/web", "--replicas=1")
	waitDeploymentPods(t, cs, "web", 1)

	// Roll: a new template makes a new ReplicaSet; the old one goes to 0.
	cpKubectl(t, kc, "", "set", "env", "deployment/web", "ROLL=2")
	cpKubectl(t, kc, "", "rollout", "status", "deployment/web", "--timeout=2m")
	rolled := waitDeploymentPods(t, cs, "web", 1)
	if got := ownerOf(t, rolled[0], "ReplicaSet"); got.Name == rs.Name {
		t.Errorf("pod %s still owned by the first ReplicaSet %s after the roll", rolled[0].Name, rs.Name)
	}
	if c := rolled[0].Spec.Containers[0]; len(c.Env) != 1 || c.Env[0].Value != "2" {
		t.Errorf("rolled pod env %v, want ROLL=2", c.Env)
	}
	if old, err := cs.AppsV1().ReplicaSets(namespace).Get(context.Background(), rs.Name, metav1.GetOptions{}); err != nil || *old.Spec.Replicas != 0 {
		t.Errorf("old replicaset after the roll: %v, %v (want replicas 0)", old, err)
	}
	if out := cpKubectl(t, kc, "", "rollout", "history", "deployment/web"); !strings.Contains(out, "2 ") {
		t.Errorf("rollout history lacks revision 2:\n%s", out)
	}

	// Foreground: kubectl --wait returns once dependents are gone.
	cpKubectl(t, kc, "", "delete", "deployment/web", "--cascade=foreground", "--wait", "--timeout=2m")
	if n := countOwned(t, cs, "web"); n != 0 {
		t.Errorf("foreground delete returned with %d replicasets and pods left", n)
	}

	// Background: the Deployment goes first, its dependents after it.
	cpKubectl(t, kc, fmt.Sprintf(deployManifest, "bg", 1), "apply", "-f", "-")
	waitDeploymentPods(t, cs, "bg", 1)
	cpKubectl(t, kc, "", "delete", "deployment/bg", "--cascade=background")
	waitNoneOwned(t, cs, "bg")

	// Orphan: the ReplicaSet and its pod stay, the pod is not restarted.
	cpKubectl(t, kc, fmt.Sprintf(deployManifest, "orph", 1), "apply", "-f", "-")
	pods := waitDeploymentPods(t, cs, "orph", 1)
	cpKubectl(t, kc, "", "delete", "deployment/orph", "--cascade=orphan", "--wait", "--timeout=2m")
	orphanRS := ownerOf(t, pods[0], "ReplicaSet")
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AppsV1().ReplicaSets(namespace).Get(ctx, orphanRS.Name, metav1.GetOptions{})
		return err == nil && len(r.OwnerReferences) == 0, nil
	})
	if err != nil {
		t.Fatalf("replicaset %s not orphaned: %v", orphanRS.Name, err)
	}
	p := waitAPIPod(t, cs, pods[0].Name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if p.UID != pods[0].UID || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("orphaned pod replaced or restarted: uid %s (was %s), restarts %d", p.UID, pods[0].UID, p.Status.ContainerStatuses[0].RestartCount)
	}
	cpKubectl(t, kc, "", "delete", "replicaset", orphanRS.Name, "--wait", "--timeout=2m")
	waitNoneOwned(t, cs, "orph")
}

// waitDeploymentPods waits until exactly n pods labelled app=name are
// Running and Ready and no other pod of it is left (terminating ones
// included), and returns them.
func waitDeploymentPods(t *testing.T, cs kubernetes.Interface, name string, n int) []v1.Pod {
	t.Helper()
	var last []v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		last = l.Items
		if len(l.Items) != n {
			return false, nil
		}
		for i := range l.Items {
			p := &l.Items[i]
			if p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning || !podReady(p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("deployment %s: %d running pods not reached: %v; last:\n%s", name, n, err, dump(last))
	}
	return last
}

// ownerOf returns p's controller owner reference of kind, checking the
// ReplicaSet controller's contract (J.2: controller and blockOwnerDeletion).
func ownerOf(t *testing.T, p v1.Pod, kind string) metav1.OwnerReference {
	t.Helper()
	ref := metav1.GetControllerOf(&p)
	if ref == nil || ref.Kind != kind {
		t.Fatalf("pod %s controller %+v, want a %s", p.Name, ref, kind)
	}
	if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("pod %s owner reference without blockOwnerDeletion: %+v", p.Name, ref)
	}
	return *ref
}

// ownerOfRS returns the controller reference of the ReplicaSet name.
func ownerOfRS(t *testing.T, cs kubernetes.Interface, name string) metav1.OwnerReference {
	t.Helper()
	rs, err := cs.AppsV1().ReplicaSets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		return *ref
	}
	return metav1.OwnerReference{}
}

// countOwned counts the ReplicaSets and pods left of the Deployment
// name: those labelled app=name.
func countOwned(t *testing.T, cs kubernetes.Interface, name string) int {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "app=" + name}
	rss, err := cs.AppsV1().ReplicaSets(namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment %s still there (or %v)", name, err)
	}
	return len(rss.Items) + len(pods.Items)
}

// waitNoneOwned waits until no ReplicaSet or pod of the Deployment name
// is left in the API server (pods leave only once the node stopped them).
func waitNoneOwned(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, apiTimeout, true, func(context.Context) (bool, error) {
		return countOwned(t, cs, name) == 0, nil
	})
	if err != nil {
		t.Fatalf("deployment %s: replicasets or pods left: %v", name, err)
	}
}
