package e2e

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// sleepLoop keeps a busybox container running and exits at once on SIGTERM
// (a shell as PID 1 gets the signal only because it traps it).
const sleepLoop = `trap 'exit 0' TERM; while true; do sleep 1; done`

func TestInitContainersRunInOrder_A24(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "init-order.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: init-order
spec:
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: init-1
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo one; sleep 1"]
  - name: init-2
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo two; sleep 1"]
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[2]q]
`, busyboxImage, sleepLoop))
	pod := PodName("init-order")
	e.WaitForPod(t, pod, phaseIs(v1.PodRunning), podStartTimeout)

	init1 := e.PodContainer(t, pod, "init-1")
	init2 := e.PodContainer(t, pod, "init-2")
	app := e.PodContainer(t, pod, "app")
	for name, st := range map[string]*runtime.ContainerStatus{"init-1": init1, "init-2": init2} {
		if st.State != runtime.ContainerExited || st.ExitCode != 0 || st.FinishedAt.IsZero() {
			t.Errorf("%s: state %s exit %d finishedAt %s, want exited with 0", name, st.State, st.ExitCode, st.FinishedAt)
		}
	}
	if init2.StartedAt.Before(init1.FinishedAt) {
		t.Errorf("init-2 started at %s, before init-1 finished at %s", init2.StartedAt, init1.FinishedAt)
	}
	if app.StartedAt.Before(init2.FinishedAt) {
		t.Errorf("app started at %s, before init-2 finished at %s", app.StartedAt, init2.FinishedAt)
	}
}

func TestInitContainerFailureWithRestartNeverFailsPod_A26(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "init-fail.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: init-fail
spec:
  restartPolicy: Never
  initContainers:
  - name: init
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo failing; exit 3"]
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[2]q]
`, busyboxImage, sleepLoop))
	pod := PodName("init-fail")
	p := e.WaitForPod(t, pod, phaseIs(v1.PodFailed), podStartTimeout)

	st := containerStatus(p, "init")
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("init container status %s, want terminated", dump(st))
	}
	if term := st.State.Terminated; term.ExitCode != 3 || term.Reason != "Error" {
		t.Errorf("init terminated with exit %d reason %q, want 3 Error", term.ExitCode, term.Reason)
	}
	if st.RestartCount != 0 {
		t.Errorf("init restartCount %d, want 0 with restartPolicy Never", st.RestartCount)
	}
	if n := len(e.Containers(t, map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": "init"})); n != 1 {
		t.Errorf("%d init containers in the runtime, want exactly 1 (no retry with restartPolicy Never)", n)
	}
	if n := len(e.Containers(t, map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": "app"})); n != 0 {
		t.Errorf("app container created %d times after its init container failed, want never", n)
	}
}

func TestPodWithSuccessfulContainersSucceeds_A5(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "succeed.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: succeed
spec:
  restartPolicy: Never
  containers:
  - name: one
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo one done"]
  - name: two
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 1; echo two done"]
`, busyboxImage))
	p := e.WaitForPod(t, PodName("succeed"), phaseIs(v1.PodSucceeded), podStartTimeout)
	for _, name := range []string{"one", "two"} {
		st := containerStatus(p, name)
		if st == nil || st.State.Terminated == nil {
			t.Fatalf("container %s: status %s, want terminated", name, dump(st))
		}
		if term := st.State.Terminated; term.ExitCode != 0 || term.Reason != "Completed" {
			t.Errorf("container %s terminated with exit %d reason %q, want 0 Completed", name, term.ExitCode, term.Reason)
		}
	}
}

func TestRunningPodStatusDetails_A8_A16_A17_A19(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "details.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: details
spec:
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: init
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo init"]
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[2]q]
`, busyboxImage, sleepLoop))
	p := e.WaitForPod(t, PodName("details"), runningAndReady, podStartTimeout)

	for _, typ := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized,
		v1.ContainersReady, v1.PodReady, v1.PodReadyToStartContainers} {
		if got := conditionStatus(p, typ); got != v1.ConditionTrue {
			t.Errorf("condition %s = %q, want True; conditions %s", typ, got, dump(p.Status.Conditions))
		}
	}
	for _, c := range p.Status.Conditions {
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}
	if p.Status.StartTime == nil || p.Status.HostIP == "" || p.Status.PodIP == "" {
		t.Errorf("startTime %v hostIP %q podIP %q, want all set", p.Status.StartTime, p.Status.HostIP, p.Status.PodIP)
	}
	app := containerStatus(p, "app")
	if app == nil || app.State.Running == nil || app.State.Running.StartedAt.IsZero() {
		t.Fatalf("app status %s, want running with startedAt", dump(app))
	}
	if !app.Ready || app.RestartCount != 0 || app.Image == "" || app.ImageID == "" ||
		!strings.HasPrefix(app.ContainerID, "containerd://") {
		t.Errorf("app status %s: want ready, restartCount 0, image, imageID, containerd:// containerID", dump(app))
	}
	initSt := containerStatus(p, "init")
	if initSt == nil || initSt.State.Terminated == nil || initSt.State.Terminated.Reason != "Completed" ||
		initSt.State.Terminated.ExitCode != 0 {
		t.Errorf("init status %s, want terminated Completed exit 0", dump(initSt))
	}
}

func TestTerminatedContainerReasons_A8_A11(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "reasons.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: reasons
spec:
  restartPolicy: Never
  containers:
  - name: ok
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo fine"]
  - name: bad
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo broken; exit 7"]
`, busyboxImage))
	p := e.WaitForPod(t, PodName("reasons"), phaseIs(v1.PodFailed), podStartTimeout)
	for _, want := range []struct {
		name   string
		exit   int32
		reason string
	}{{"ok", 0, "Completed"}, {"bad", 7, "Error"}} {
		st := containerStatus(p, want.name)
		if st == nil || st.State.Terminated == nil {
			t.Fatalf("container %s: status %s, want terminated", want.name, dump(st))
		}
		term := st.State.Terminated
		if term.ExitCode != want.exit || term.Reason != want.reason {
			t.Errorf("container %s: exit %d reason %q, want %d %q", want.name, term.ExitCode, term.Reason, want.exit, want.reason)
		}
		if term.StartedAt.IsZero() || term.FinishedAt.Before(&term.StartedAt) || term.ContainerID == "" {
			t.Errorf("container %s: terminated %s, want startedAt <= finishedAt and a containerID", want.name, dump(term))
		}
	}
	if got := conditionStatus(p, v1.PodReady); got != v1.ConditionFalse {
		t.Errorf("Ready = %q for a failed pod, want False", got)
	}
}

func TestImagePullPolicyNeverWithMissingImage_E4_E9(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	const missing = "skiff.test/not-imported:1"
	e.WriteManifest(t, "never-pull.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: never-pull
spec:
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
`, missing))
	pod := PodName("never-pull")
	p := e.WaitForPod(t, pod, func(p *v1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.State.Waiting != nil && st.State.Waiting.Reason == "ErrImageNeverPull"
	}, podStartTimeout)
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if msg := containerStatus(p, "app").State.Waiting.Message; !strings.Contains(msg, missing) {
		t.Errorf("waiting message %q does not name the image %s", msg, missing)
	}
	if n := len(e.Containers(t, podLabels(pod))); n != 0 {
		t.Errorf("%d containers created for an image that must never be pulled", n)
	}
}
