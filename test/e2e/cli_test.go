package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
)

func TestCLIPodsAndLogs_A34_A35(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "cli.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: cli
spec:
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: init
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo init says hi"]
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do echo hello from app; sleep 1; done"]
`, busyboxImage))
	pod := PodName("cli")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)

	out, err := e.Skiff(t, "pods")
	if err != nil {
		t.Fatalf("skiff pods: %v\n%s", err, out)
	}
	header := regexp.MustCompile(`(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\b`)
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pod) + `\s+1/1\s+Running\s+0\s+\S+`)
	if !header.MatchString(out) || !row.MatchString(out) {
		t.Errorf("skiff pods output lacks the header or the row for %s:\n%s", pod, out)
	}

	for container, want := range map[string]string{"app": "hello from app", "init": "init says hi"} {
		eventually(t, 30*time.Second, func() (bool, string) {
			out, err := e.Skiff(t, "logs", pod, "-c", container)
			return err == nil && strings.Contains(out, want),
				fmt.Sprintf("skiff logs %s -c %s: err %v, output %q, want %q", pod, container, err, out, want)
		})
	}

	// The log file follows the kubelet layout and the CRI log format.
	logFile := podlogs.ContainerLogPath(podlogs.PodDir(e.PodLogsDir, namespace, pod, string(p.UID)), "app", 0)
	line := regexp.MustCompile(`(?m)^\S+ stdout F hello from app$`)
	eventually(t, 30*time.Second, func() (bool, string) {
		data, err := os.ReadFile(logFile)
		return err == nil && line.Match(data), fmt.Sprintf("log file %s: err %v, content %q", logFile, err, data)
	})
}

func TestExampleManifestRuns(t *testing.T) {
	e := NewEnv(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "manifests", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "example.yaml", string(data))
	pod := PodName("example")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	if st := containerStatus(p, "init"); st == nil || st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
		t.Errorf("example init container: %s, want terminated with 0", dump(st))
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		out, err := e.Skiff(t, "logs", pod, "-c", "app")
		return err == nil && strings.Contains(out, "hello from skiff"), fmt.Sprintf("skiff logs: %v %q", err, out)
	})
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s", p.Status.Phase)
	}
}
