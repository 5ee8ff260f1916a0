package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// extremePods are valid pods at the edges (issue 34): 10,000 env vars, a
// 1 MB command line in one argument (over Linux's 128 KiB per argument)
// and in 8,192 of 128 bytes, 100 containers, 1,000 volumes.
func extremePods() map[string]*v1.Pod {
	pods := map[string]*v1.Pod{}
	env := apiPod("env10k", 1, "sleep 100000")
	for i := range 10000 {
		env.Spec.Containers[0].Env = append(env.Spec.Containers[0].Env, v1.EnvVar{Name: "E" + strconv.Itoa(i), Value: "v"})
	}
	pods["env10k"] = env
	single := apiPod("arg1m", 1, "sleep 100000")
	single.Spec.Containers[0].Args = []string{strings.Repeat("a", 1<<20)}
	pods["arg1m"] = single
	split := apiPod("args8k", 1, "sleep 100000")
	for range 8192 {
		split.Spec.Containers[0].Args = append(split.Spec.Containers[0].Args, strings.Repeat("b", 127))
	}
	pods["args8k"] = split
	many := apiPod("ctr100", 1, "sleep 100000")
	for i := 1; i < 100; i++ {
		c := many.Spec.Containers[0]
		c.Name = fmt.Sprintf("app%d", i)
		many.Spec.Containers = append(many.Spec.Containers, c)
	}
	pods["ctr100"] = many
	vols := apiPod("vol1k", 1, "sleep 100000")
	for i := range 1000 {
		name := fmt.Sprintf("v%d", i)
		vols.Spec.Volumes = append(vols.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		vols.Spec.Containers[0].VolumeMounts = append(vols.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: name, MountPath: "/v/" + name})
	}
	pods["vol1k"] = vols
	return pods
}

// TestFaultsExtremePods: each extreme pod through a real API server ends
// Running and Ready or with a clear error in its status; the agent's
// memory stays bounded and a pod already running is not disturbed.
func TestFaultsExtremePods(t *testing.T) {
	e, sc := faultsEnv(t)
	if sc.name != "full" {
		t.Skip("full mode only (FAULTS=full): five extreme pods take minutes to start and delete on 2 cores")
	}
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", c.Kubeconfig(nodeName)}})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod("bystander", 1, "sleep 100000"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "bystander", "Ready", podReady)
	bystander := e.PodContainer(t, "bystander", "app").ID
	rssBefore := processRSS(t, e.agent.cmd.Process.Pid)
	var outcomes []string
	pods := extremePods()
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		p := pods[name]
		start := time.Now()
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			outcomes = append(outcomes, fmt.Sprintf("%s: refused by the API server (%v)", name, err))
			continue
		}
		got := waitExtreme(t, cs, name)
		outcomes = append(outcomes, fmt.Sprintf("%s: %s after %s", name, got, time.Since(start).Round(100*time.Millisecond)))
		if got == "" {
			t.Errorf("pod %s: neither Running and Ready nor a clear error within 5 min", name)
		}
	}
	rssAfter := processRSS(t, e.agent.cmd.Process.Pid)
	if rssAfter > rssBefore+200<<20 {
		t.Errorf("agent RSS %d MB -> %d MB with the extreme pods", rssBefore>>20, rssAfter>>20)
	}
	if p := waitAPIPod(t, cs, "bystander", "Ready", podReady); p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("bystander restarted")
	}
	if got := e.PodContainer(t, "bystander", "app").ID; got != bystander {
		t.Errorf("bystander's container %s replaced by %s", bystander, got)
	}
	// Deleting them: gone from the node, the bystander kept.
	deleted := time.Now()
	grace := int64(1)
	for name := range pods {
		if err := cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
	}
	for name := range pods {
		e.WaitForPodGone(t, name, 5*time.Minute)
	}
	gone := time.Since(deleted)
	e.report(t, faultRecord{scenario: "extreme valid pods through the API server", scale: sc.name, pods: len(outcomes) + 1,
		recovery: gone.Round(time.Second).String() + " to delete them all",
		notes:    fmt.Sprintf("agent RSS %d -> %d MB; %s", rssBefore>>20, rssAfter>>20, strings.Join(outcomes, "; "))})
}

// waitExtreme waits until pod name is Running and Ready for 5 s without a
// restart ("Running and Ready") or a container waits or terminated with a
// reason and a message (that, as "reason: message"), "" after 5 min.
func waitExtreme(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	var out string
	var runningSince time.Time
	_ = wait.PollUntilContextTimeout(context.Background(), time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Status.Phase == v1.PodRunning && podReady(p) {
			// Running and Ready, and still so 5 s later without a restart
			// (a command the kernel refuses fails just after the start).
			if runningSince.IsZero() {
				runningSince = time.Now()
			}
			if time.Since(runningSince) >= 5*time.Second && restarts(p) == 0 {
				out = "Running and Ready"
				return true, nil
			}
			return false, nil
		}
		runningSince = time.Time{}
		for _, s := range p.Status.ContainerStatuses { // the termination's message says more than a back-off's
			for _, term := range []*v1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
				if term != nil && term.Message != "" {
					out = term.Reason + ": " + truncate(term.Message, 160)
					return true, nil
				}
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && w.Message != "" && w.Reason != "ContainerCreating" {
				out = w.Reason + ": " + truncate(w.Message, 160)
				return true, nil
			}
		}
		return false, nil
	})
	return out
}

func restarts(p *v1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// processRSS is the resident set size of pid in bytes.
func processRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}
