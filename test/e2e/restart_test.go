package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// twoContainerPod keeps two busybox containers running.
func twoContainerPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: first
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[3]q]
  - name: second
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[3]q]
`, name, busyboxImage, sleepLoop)
}

// barrier writes a new pod manifest and waits until it is running: a
// restarted agent that started it has read its sources and synced, so
// checks made afterwards see what it decided for the older pods.
func (e *Env) barrier(t *testing.T, name string) {
	t.Helper()
	e.WriteManifest(t, name+".yaml", twoContainerPod(name))
	e.WaitForPod(t, PodName(name), runningAndReady, podStartTimeout)
}

func TestAgentRestartAfterSIGTERMAdoptsPods_A2_A3(t *testing.T) {
	testAgentRestartAdoptsPods(t, (*Env).StopAgent)
}

func TestAgentRestartAfterSIGKILLAdoptsPods_A2_A3(t *testing.T) {
	testAgentRestartAdoptsPods(t, (*Env).KillAgent)
}

// testAgentRestartAdoptsPods stops the agent with stop, starts it again and
// checks that the new agent adopted the running pod as it was: same UID,
// same sandbox, same containers, no restarts.
func testAgentRestartAdoptsPods(t *testing.T, stop func(*Env, *testing.T)) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "keep.yaml", twoContainerPod("keep"))
	pod := PodName("keep")
	before := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	uid := string(before.UID)
	containers := idSet(e.Containers(t, uidLabels(uid)))
	sandboxes := sandboxIDs(e.Sandboxes(t, uidLabels(uid)))
	if len(containers) != 2 || len(sandboxes) != 1 {
		t.Fatalf("before restart: %d containers, %d sandboxes; want 2 and 1", len(containers), len(sandboxes))
	}

	stop(e, t)
	e.StartAgent(t, AgentOptions{})
	e.barrier(t, "after-restart")

	after := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	if string(after.UID) != uid {
		t.Errorf("pod UID changed across the restart: %s -> %s", uid, after.UID)
	}
	cs := e.Containers(t, uidLabels(uid))
	if got := idSet(cs); !slices.Equal(got, containers) {
		t.Errorf("containers after restart %v, want the same as before %v", got, containers)
	}
	for _, c := range cs {
		if c.State != runtime.ContainerRunning {
			t.Errorf("container %s (%s) is %s after the restart, want Running", c.Name, c.ID, c.State)
		}
	}
	if got := sandboxIDs(e.Sandboxes(t, uidLabels(uid))); !slices.Equal(got, sandboxes) {
		t.Errorf("sandboxes after restart %v, want %v", got, sandboxes)
	}
	for _, st := range after.Status.ContainerStatuses {
		id := strings.TrimPrefix(st.ContainerID, "containerd://")
		if st.RestartCount != 0 || !slices.Contains(containers, id) {
			t.Errorf("status of %s: restartCount %d containerID %s; want 0 and one of %v",
				st.Name, st.RestartCount, st.ContainerID, containers)
		}
	}
}

func sandboxIDs(sbs []*runtime.Sandbox) []string {
	ids := make([]string, 0, len(sbs))
	for _, sb := range sbs {
		ids = append(ids, sb.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestMalformedManifestIsReportedAndIgnored_A1(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "good.yaml", twoContainerPod("good"))
	good := e.WaitForPod(t, PodName("good"), runningAndReady, podStartTimeout)
	containers := idSet(e.Containers(t, uidLabels(string(good.UID))))

	bad := map[string]struct{ manifest, fieldPath string }{
		// A misspelt field: strict decoding names its path.
		"bad-field.yaml": {fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: bad-field
spec:
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    comand: ["sh"]
`, busyboxImage), "spec.containers[0].comand"},
		// A missing required value: validation names its path.
		"bad-value.yaml": {`apiVersion: v1
kind: Pod
metadata:
  name: bad-value
spec:
  containers:
  - name: app
`, "spec.containers[0].image"},
	}
	for file, b := range bad {
		e.WriteManifest(t, file, b.manifest)
	}
	e.barrier(t, "after-bad")

	for file, b := range bad {
		eventually(t, podStartTimeout, func() (bool, string) {
			return logHasLineWith(e.AgentLog(t), file, b.fieldPath),
				fmt.Sprintf("agent log has no line naming both %s and %s", file, b.fieldPath)
		})
	}
	list, err := e.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, "bad-") {
			t.Errorf("malformed manifest produced pod %s", p.Name)
		}
	}
	now := e.WaitForPod(t, PodName("good"), runningAndReady, podStartTimeout)
	if now.UID != good.UID {
		t.Errorf("good pod UID changed from %s to %s", good.UID, now.UID)
	}
	if got := idSet(e.Containers(t, uidLabels(string(good.UID)))); !slices.Equal(got, containers) {
		t.Errorf("good pod containers %v, want untouched %v", got, containers)
	}
	if phase := now.Status.Phase; phase != v1.PodRunning {
		t.Errorf("good pod phase %s, want Running", phase)
	}
}

// logHasLineWith reports whether one line of log contains every part.
func logHasLineWith(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
