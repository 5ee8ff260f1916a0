package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestContainerRestartRules: a container's own restartPolicy and its
// restartPolicyRules (ContainerRestartRules, beta and on since 1.35)
// decide its restarts before the pod's restartPolicy: under a pod Never,
// a container restarted on exit code 42 runs again and then ends the pod
// Succeeded; under a pod Always, a container with restartPolicy Never
// stays exited while the other keeps running; a RestartAllContainers rule
// is refused as the kubelet refuses it on a node that does not declare
// the feature.
func TestContainerRestartRules(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "rules.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: rules
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "if [ -e /data/ran ]; then exit 0; fi; touch /data/ran; exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
    volumeMounts:
    - {name: data, mountPath: /data}
---
apiVersion: v1
kind: Pod
metadata:
  name: mixed
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: once
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exit 3"]
    restartPolicy: Never
  - name: server
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "100000"]
---
apiVersion: v1
kind: Pod
metadata:
  name: restartall
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: %[1]s
    command: ["true"]
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [1]}
`, busyboxImage))

	rules := e.WaitForPod(t, PodName("rules"), phaseIs(v1.PodSucceeded), podStartTimeout)
	if s := containerStatus(rules, "app"); s.RestartCount != 1 || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 42 {
		t.Errorf("rules/app: restartCount %d, lastState %+v; want one restart after exit 42", s.RestartCount, s.LastTerminationState)
	}

	e.WaitForPod(t, PodName("mixed"), func(p *v1.Pod) bool {
		s := containerStatus(p, "once")
		return p.Status.Phase == v1.PodRunning && s != nil && s.State.Terminated != nil
	}, podStartTimeout)
	time.Sleep(3 * time.Second) // a restart would come at once (no back-off yet)
	mixed := e.WaitForPod(t, PodName("mixed"), phaseIs(v1.PodRunning), podStartTimeout)
	if s := containerStatus(mixed, "once"); s.RestartCount != 0 || s.State.Terminated == nil || s.State.Terminated.ExitCode != 3 {
		t.Errorf("mixed/once: restartCount %d, state %+v; want exited 3, never restarted", s.RestartCount, s.State)
	}
	if s := containerStatus(mixed, "server"); s.State.Running == nil {
		t.Errorf("mixed/server: %+v, want running", s.State)
	}

	all := e.WaitForPod(t, PodName("restartall"), phaseIs(v1.PodFailed), podStartTimeout)
	if all.Status.Reason != "PodFeatureUnsupported" || all.Status.Message != "Pod was rejected: Pod requires node features that are not available: RestartAllContainersOnContainerExits" {
		t.Errorf("restartall: reason %q message %q", all.Status.Reason, all.Status.Message)
	}
}
