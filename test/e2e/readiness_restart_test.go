package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// readinessPod keeps one busybox container running with an exec readiness
// probe every 10 s.
func readinessPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[3]q]
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 10}
`, name, busyboxImage, sleepLoop)
}

// podSnapshot is what must not change across the restart.
type podSnapshot struct {
	containerID string
	restarts    int32
}

func snapshotOf(p *v1.Pod) podSnapshot {
	if len(p.Status.ContainerStatuses) != 1 {
		return podSnapshot{}
	}
	st := p.Status.ContainerStatuses[0]
	return podSnapshot{containerID: st.ContainerID, restarts: st.RestartCount}
}

// An agent restart (kill -9, containers keep running) never flips a Ready
// condition to False: the new agent carries the last readiness results
// over until its own probes report (issue 12 item 6, the kubelet's
// KEP-4781).
func TestAgentRestartKeepsReadiness_A2(t *testing.T) {
	const pods = 6
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	var names []string
	for i := range pods {
		name := fmt.Sprintf("ready-%d", i)
		e.WriteManifest(t, name+".yaml", readinessPod(name))
		names = append(names, PodName(name))
	}
	before := map[string]podSnapshot{}
	for _, n := range names {
		before[n] = snapshotOf(e.WaitForPod(t, n, runningAndReady, podStartTimeout))
	}
	// The agent writes its probe checkpoint about a second after the
	// results change; wait until it lists every container.
	eventually(t, 30*time.Second, func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(e.s.Root, "probes.json"))
		for n, s := range before {
			if !strings.Contains(string(data), strings.TrimPrefix(s.containerID, "containerd://")) {
				return false, "checkpoint lacks " + n + ": " + string(data)
			}
		}
		return true, ""
	})

	e.KillAgent(t)
	e.StartAgent(t, AgentOptions{})
	var flips []string
	seen := map[string]int{}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		list, err := e.Pods()
		if err != nil {
			t.Fatalf("GET /pods after the restart: %v", err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			if _, ok := before[p.Name]; !ok {
				continue
			}
			seen[p.Name]++
			// A missing Ready condition (a pod listed before the new agent
			// observed it) reads as not ready too.
			if st := conditionStatus(p, v1.PodReady); st != v1.ConditionTrue {
				flips = append(flips, fmt.Sprintf("%s Ready=%q (phase %s)", p.Name, st, p.Status.Phase))
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	if len(flips) > 0 {
		t.Errorf("%d observations of a pod not ready after the restart, first: %v", len(flips), flips[:min(len(flips), 10)])
	}
	for _, n := range names {
		p := e.WaitForPod(t, n, runningAndReady, podStartTimeout)
		if got := snapshotOf(p); got != before[n] {
			t.Errorf("%s: container %+v after the restart, want %+v", n, got, before[n])
		}
		if seen[n] == 0 {
			t.Errorf("%s: never listed in the 15 s after the restart", n)
		}
	}
}
