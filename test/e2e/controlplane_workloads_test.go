package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// jobManifest is a Job of busybox pods that run command (sh -c) once,
// parallelism at a time, until completions succeed or backoffLimit pods
// failed.
const jobManifest = `apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
spec:
  completions: %[2]d
  parallelism: 2
  backoffLimit: %[3]d
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: ` + busyboxImage + `
        command: ["sh", "-c", %[4]q]
`

// TestControlPlaneWorkloads_Issue36: against `skiff agent --control-plane`, a
// Job applied with kubectl runs its pods on the node, two at a time, until
// three succeed (kubectl wait --for=condition=complete; get shows 3/3 and
// its logs the pods' output); a Job whose pods fail stops after its
// backoffLimit (condition Failed, reason BackoffLimitExceeded); kubectl's
// validation texts are upstream's; a CronJob starts Jobs on its schedule
// and on `kubectl create job --from`; deleting a Job deletes its pods. A
// DaemonSet runs one pod on the node and rolls it to a new template; a
// pod whose nodeSelector the node does not match is rejected as by the
// kubelet (NodeAffinity).
func TestControlPlaneWorkloads_Issue36(t *testing.T) {
	cs, kc := startControlPlane(t)

	cpKubectl(t, kc, fmt.Sprintf(jobManifest, "pi", 3, 6, "echo done"), "apply", "-f", "-")
	cpKubectl(t, kc, fmt.Sprintf(jobManifest, "fails", 1, 1, "exit 3"), "apply", "-f", "-")
	cpKubectl(t, kc, "", "wait", "--for=condition=complete", "job/pi", "--timeout=3m")
	if out := cpKubectl(t, kc, "", "get", "job", "pi", "--no-headers"); !strings.Contains(out, "Complete") || !strings.Contains(out, "3/3") {
		t.Errorf("kubectl get job pi = %q, want Complete and 3/3", out)
	}
	// kubectl says on stderr which of the Job's pods it shows.
	if out := cpKubectl(t, kc, "", "logs", "job/pi"); !strings.HasSuffix(out, "\ndone\n") {
		t.Errorf("kubectl logs job/pi = %q, want a pod's output, done", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=pi"})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("pods of job pi: %d, %v; want 3", len(pods.Items), err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != "Succeeded" {
			t.Errorf("pod %s on %q in phase %s, want Succeeded on the node", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}

	cpKubectl(t, kc, "", "wait", "--for=condition=failed", "job/fails", "--timeout=3m")
	failed, err := cs.BatchV1().Jobs(namespace).Get(ctx, "fails", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status.Failed != 2 || !hasJobCondition(failed.Status.Conditions, "Failed", "BackoffLimitExceeded") {
		t.Errorf("job fails: %d failed, conditions %+v; want 2 (backoffLimit 1) and Failed/BackoffLimitExceeded", failed.Status.Failed, failed.Status.Conditions)
	}

	bad := strings.Replace(fmt.Sprintf(jobManifest, "bad", 1, 1, "true"), "restartPolicy: Never", "restartPolicy: Always", 1)
	if out, err := cpKubectlErr(kc, bad, "apply", "-f", "-"); err == nil ||
		!strings.Contains(out, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`) {
		t.Errorf("a job with restartPolicy Always: %v\n%s\nwant upstream's validation error", err, out)
	}

	testCronJob(t, kc)
	testDaemonSet(t, kc)
	testNodeAffinityRejected(t, kc)

	cpKubectl(t, kc, "", "delete", "job", "pi", "fails", "--wait=true")
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		left, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name"})
		return err == nil && len(left.Items) == 0, nil
	}); err != nil {
		t.Fatalf("the deleted jobs' pods were not deleted: %v", err)
	}
}

// hasJobCondition reports whether conds has typ True with reason.
func hasJobCondition(conds []batchv1.JobCondition, typ batchv1.JobConditionType, reason string) bool {
	for _, c := range conds {
		if c.Type == typ && c.Status == v1.ConditionTrue && c.Reason == reason {
			return true
		}
	}
	return false
}

// cronJobManifest is a CronJob every minute whose Jobs echo tick.
const cronJobManifest = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
spec:
  schedule: "* * * * *"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          automountServiceAccountToken: false
          terminationGracePeriodSeconds: 1
          containers:
          - name: tick
            image: ` + busyboxImage + `
            command: ["sh", "-c", "echo tick"]
`

// testCronJob: the CronJob tick starts a Job that completes, at the next
// minute and at once on kubectl create job --from; deleting the CronJob
// deletes its Jobs.
func testCronJob(t *testing.T, kc string) {
	t.Helper()
	cpKubectl(t, kc, cronJobManifest, "apply", "-f", "-")
	cpKubectl(t, kc, "", "create", "job", "now", "--from=cronjob/tick")
	cpKubectl(t, kc, "", "wait", "--for=condition=complete", "job/now", "--timeout=2m")
	if out := cpKubectl(t, kc, "", "logs", "job/now"); strings.TrimSpace(out) != "tick" {
		t.Errorf("kubectl logs job/now = %q, want tick", out)
	}
	// The scheduled run: within a minute, plus the Job's own time.
	eventually(t, 150*time.Second, func() (bool, string) {
		out := cpKubectl(t, kc, "", "get", "jobs",
			"-o", `jsonpath={range .items[?(@.metadata.ownerReferences[0].name=="tick")]}{.metadata.name}={.status.succeeded}{"\n"}{end}`)
		return scheduledJobSucceeded(out), fmt.Sprintf("no scheduled Job of CronJob tick succeeded: %q", out)
	})
	if out := cpKubectl(t, kc, "", "get", "cronjob", "tick", "--no-headers"); !strings.Contains(out, "* * * * *") {
		t.Errorf("kubectl get cronjob tick = %q, want its schedule", out)
	}
	cpKubectl(t, kc, "", "delete", "cronjob", "tick", "--wait=true")
}

// scheduledJobSucceeded reports whether out, lines of name=succeeded,
// has a Job other than "now" with one success.
func scheduledJobSucceeded(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if name, n, ok := strings.Cut(line, "="); ok && name != "now" && n == "1" {
			return true
		}
	}
	return false
}

// daemonSetManifest is a DaemonSet of busybox pods that stop at once on
// SIGTERM.
const daemonSetManifest = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: agent
        image: ` + busyboxImage + `
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// testDaemonSet: the DaemonSet agent runs one pod on the node, a new
// template replaces it (rollout status), and deleting the DaemonSet
// deletes its pod.
func testDaemonSet(t *testing.T, kc string) {
	t.Helper()
	cpKubectl(t, kc, daemonSetManifest, "apply", "-f", "-")
	cpKubectl(t, kc, "", "rollout", "status", "daemonset/agent", "--timeout=2m")
	first := strings.TrimSpace(cpKubectl(t, kc, "", "get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].metadata.name}"))
	if first == "" || strings.Contains(first, " ") {
		t.Fatalf("daemon pods %q, want one", first)
	}
	cpKubectl(t, kc, "", "set", "env", "daemonset/agent", "ROLL=1")
	cpKubectl(t, kc, "", "rollout", "status", "daemonset/agent", "--timeout=2m")
	out := cpKubectl(t, kc, "", "get", "daemonset", "agent", "--no-headers")
	if f := strings.Fields(out); len(f) < 6 || f[1] != "1" || f[2] != "1" || f[3] != "1" || f[4] != "1" {
		t.Errorf("kubectl get daemonset agent = %q, want 1 desired, current, ready and up to date", out)
	}
	eventually(t, 2*time.Minute, func() (bool, string) {
		pods := strings.TrimSpace(cpKubectl(t, kc, "", "get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].metadata.name}"))
		return pods != "" && pods != first && !strings.Contains(pods, " "),
			fmt.Sprintf("daemon pods after the rollout: %q (first %s), want one new pod", pods, first)
	})
	cpKubectl(t, kc, "", "delete", "daemonset", "agent", "--wait=true")
}

// testNodeAffinityRejected: a pod whose nodeSelector the node does not
// match fails at admission with the kubelet's NodeAffinity reason.
func testNodeAffinityRejected(t *testing.T, kc string) {
	t.Helper()
	cpKubectl(t, kc, "", "run", "elsewhere", "--image="+busyboxImage, "--restart=Never",
		`--overrides={"spec":{"nodeSelector":{"disk":"none"},"automountServiceAccountToken":false}}`, "--", "true")
	var out string
	eventually(t, time.Minute, func() (bool, string) {
		out = cpKubectl(t, kc, "", "get", "pod", "elsewhere", "-o", "jsonpath={.status.phase}/{.status.reason}/{.status.message}")
		return strings.HasPrefix(out, "Failed/"), fmt.Sprintf("pod elsewhere: %q, want Failed with NodeAffinity", out)
	})
	if want := "Failed/NodeAffinity/Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"; out != want {
		t.Errorf("pod elsewhere: %q, want %q", out, want)
	}
	cpKubectl(t, kc, "", "delete", "pod", "elsewhere", "--wait=true")
}
