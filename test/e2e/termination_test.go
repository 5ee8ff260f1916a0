package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// testserverPod is a one-container pod running the test server with args.
func testserverPod(name string, grace int, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    args: [%s]
`, name, grace, testserverImage, strings.Join(quoted, ", "))
}

func TestManifestDeleteRemovesPodWithinGracePeriod_A42(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	const grace = 30
	e.WriteManifest(t, "delete-me.yaml", testserverPod("delete-me", grace, "--log-every=1s"))
	pod := PodName("delete-me")
	p := e.WaitForPod(t, pod, phaseIs(v1.PodRunning), podStartTimeout)
	uid := string(p.UID)
	if len(e.Sandboxes(t, uidLabels(uid))) == 0 || len(e.Containers(t, uidLabels(uid))) == 0 {
		t.Fatalf("running pod %s has no sandbox or container in the runtime", pod)
	}

	start := time.Now()
	e.RemoveManifest(t, "delete-me.yaml")
	// The test server exits on SIGTERM, so everything must be gone well
	// within the grace period.
	e.WaitForPodGone(t, pod, grace*time.Second)
	e.waitPodObjectsGone(t, uid, grace*time.Second-time.Since(start))
}

func TestGracePeriodEndsWithSIGKILL_A42_A43(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	exits := e.watchExits(t)
	e.WriteManifest(t, "stubborn.yaml", testserverPod("stubborn", 3, "--ignore-sigterm"))
	pod := PodName("stubborn")
	e.WaitForPod(t, pod, phaseIs(v1.PodRunning), podStartTimeout)
	app := e.PodContainer(t, pod, "app")
	log := openLog(t, app.LogPath)

	removed := time.Now()
	e.RemoveManifest(t, "stubborn.yaml")
	ws := map[string]*stopWatch{"app": {id: app.ID, log: log}}
	e.watchStops(t, ws, exits)
	w := ws["app"]
	t.Logf("after the manifest was removed: last seen running at +%s, exited at +%s, exit code %d, SIGTERM logged %t",
		w.lastRunning.Sub(removed), w.end.Sub(removed), w.exitCode, w.sigtermFound)

	if alive := w.lastRunning.Sub(removed); alive < 2500*time.Millisecond {
		t.Errorf("container stopped %s after the manifest was removed; with SIGTERM ignored it must live until the 3s grace period ends", alive)
	}
	if took := w.end.Sub(removed); took > 20*time.Second {
		t.Errorf("container ran %s after removal; SIGKILL was due after the 3s grace period", took)
	}
	if !w.sigtermFound {
		t.Errorf("the container never logged receiving SIGTERM before it was killed")
	}
	if w.exitCode != 137 {
		t.Errorf("exit code %d, want 137 (SIGKILL)", w.exitCode)
	}
}

func TestManifestEditReplacesPod_A3(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	manifest := func(version string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: edited
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo %s; %s"]
`, busyboxImage, version, sleepLoop)
	}
	e.WriteManifest(t, "edited.yaml", manifest("version-1"))
	pod := PodName("edited")
	old := e.WaitForPod(t, pod, phaseIs(v1.PodRunning), podStartTimeout)
	oldUID := string(old.UID)

	e.WriteManifest(t, "edited.yaml", manifest("version-2"))
	updated := e.WaitForPod(t, pod, func(p *v1.Pod) bool {
		return string(p.UID) != oldUID && p.Status.Phase == v1.PodRunning
	}, podStartTimeout)

	e.waitPodObjectsGone(t, oldUID, podGoneTimeout)
	cs := e.Containers(t, uidLabels(string(updated.UID)))
	if len(cs) != 1 || cs[0].State != runtime.ContainerRunning {
		t.Fatalf("new pod %s: containers %s, want one running", updated.UID, dump(cs))
	}
	eventually(t, podGoneTimeout, func() (bool, string) {
		list, err := e.Pods()
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 1, fmt.Sprintf("/pods lists %d pods after the edit, want only the new one", len(list.Items))
	})
}
