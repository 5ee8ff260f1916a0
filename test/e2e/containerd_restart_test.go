package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// containerdRecoverTimeout bounds how long the agent may take to have a
// new containerd serving after the old one was killed (restart back-off
// 1 s plus containerd's start-up, a few seconds on a loaded machine).
const containerdRecoverTimeout = 30 * time.Second

// exitOnSignalFile runs until /tmp/exit-now exists in the container, then
// exits 3: the test makes it exit at a moment of its choosing.
const exitOnSignalFile = `trap 'exit 0' TERM; while [ ! -e /tmp/exit-now ]; do sleep 0.2; done; exit 3`

// TestManagedContainerdRestartedAfterKill (issue 12): kill -9 of the
// managed containerd. The agent restarts it, /healthz recovers, every pod
// keeps its containers (containerd's shims survive), nothing is recreated
// or restarted, a new pod starts, and a container exit after the restart
// is noticed.
func TestManagedContainerdRestartedAfterKill(t *testing.T) {
	e := NewEnv(t)
	e.SkipOnExternalRuntime(t, "it kills the containerd that skiff supervises")
	e.StartAgent(t, AgentOptions{})
	const keep = 5
	for i := range keep {
		e.WriteManifest(t, fmt.Sprintf("keep%d.yaml", i), podSpec(fmt.Sprintf("keep%d", i),
			[]string{"terminationGracePeriodSeconds: 2"}, nil, []string{sleeper("main")}))
	}
	e.WriteManifest(t, "exiter.yaml", podSpec("exiter", []string{"terminationGracePeriodSeconds: 2"}, nil,
		[]string{container("main", busyboxImage, []string{"sh", "-c", exitOnSignalFile}, nil)}))
	names := []string{PodName("exiter")}
	for i := range keep {
		names = append(names, PodName(fmt.Sprintf("keep%d", i)))
	}
	before := map[string]*v1.Pod{}
	sandboxes := map[string][]string{}
	for _, name := range names {
		before[name] = e.WaitForPod(t, name, runningAndReady, podStartTimeout)
		sandboxes[name] = sandboxIDs(e.Sandboxes(t, uidLabels(string(before[name].UID))))
	}

	old := e.managedContainerdPid(t)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 containerd (pid %d): %v", old, err)
	}
	killed := time.Now()
	// While containerd is down the agent is unhealthy: its restart waits
	// a back-off of a second first.
	eventually(t, 5*time.Second, func() (bool, string) {
		code, body, err := e.get("/healthz")
		return err == nil && code != http.StatusOK, fmt.Sprintf("/healthz = %d %q %v, want a failure", code, body, err)
	})
	var pid int
	eventually(t, containerdRecoverTimeout, func() (bool, string) {
		pid = e.findManagedContainerd()
		return pid != 0 && pid != old, fmt.Sprintf("no new containerd (old pid %d, now %d)", old, pid)
	})
	eventually(t, containerdRecoverTimeout, func() (bool, string) {
		code, body, err := e.get("/healthz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("/healthz = %d %q %v", code, body, err)
	})
	t.Logf("containerd %d replaced by %d; healthy again %v after kill -9", old, pid, time.Since(killed).Round(time.Millisecond))

	// A pod added after the restart starts: the agent talks to the new
	// containerd. Once it runs, the agent has relisted for a while.
	e.WriteManifest(t, "after.yaml", podSpec("after", []string{"terminationGracePeriodSeconds: 2"}, nil, []string{sleeper("main")}))
	e.WaitForPod(t, PodName("after"), runningAndReady, podStartTimeout)

	for _, name := range names {
		e.checkUnchanged(t, before[name])
		if got := sandboxIDs(e.Sandboxes(t, uidLabels(string(before[name].UID)))); !slices.Equal(got, sandboxes[name]) {
			t.Errorf("pod %s sandboxes %v, want still %v", name, got, sandboxes[name])
		}
	}

	// An exit after the restart is noticed and the container restarted.
	exiter := before[PodName("exiter")]
	oldID := strings.TrimPrefix(exiter.Status.ContainerStatuses[0].ContainerID, "containerd://")
	e.Exec(t, oldID, "touch", "/tmp/exit-now")
	restarted := e.WaitForPod(t, PodName("exiter"), func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && cs.State.Running != nil && runningAndReady(p)
	}, podStartTimeout)
	cs := containerStatus(restarted, "main")
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("exiter's last termination = %s, want exit code 3", dump(cs.LastTerminationState))
	}

	log := e.AgentLog(t)
	for _, want := range [][]string{
		{"containerd exited; restarting it", "pid=" + strconv.Itoa(old), "signal: killed"},
		{"containerd restarted and ready", "pid=" + strconv.Itoa(pid)},
	} {
		if !logHasLineWith(log, want...) {
			t.Errorf("agent log has no line with %q", want)
		}
	}
}

// checkUnchanged checks that pod p (as it was before containerd was
// killed) still runs the same containers, with no restart and no fresh
// condition transition, in /pods and in the runtime.
func (e *Env) checkUnchanged(t *testing.T, p *v1.Pod) {
	t.Helper()
	now, err := e.findPod(p.Name)
	if err != nil || now == nil {
		t.Fatalf("pod %s after the containerd restart: %v, %v", p.Name, now, err)
	}
	if !runningAndReady(now) {
		t.Errorf("pod %s not running and ready after the containerd restart: %s", p.Name, dump(now.Status))
	}
	if len(now.Status.ContainerStatuses) != len(p.Status.ContainerStatuses) {
		t.Fatalf("pod %s container statuses %s, want %s", p.Name, dump(now.Status.ContainerStatuses), dump(p.Status.ContainerStatuses))
	}
	for i, want := range p.Status.ContainerStatuses {
		got := now.Status.ContainerStatuses[i]
		if got.ContainerID != want.ContainerID || got.RestartCount != 0 || got.State.Running == nil ||
			!got.State.Running.StartedAt.Equal(&want.State.Running.StartedAt) {
			t.Errorf("pod %s container %s: %s, want still %s (running, restartCount 0, same start)",
				p.Name, want.Name, dump(got), want.ContainerID)
		}
	}
	for _, want := range p.Status.Conditions {
		for _, got := range now.Status.Conditions {
			if got.Type == want.Type && (got.Status != want.Status || !got.LastTransitionTime.Equal(&want.LastTransitionTime)) {
				t.Errorf("pod %s condition %s changed: %s -> %s", p.Name, want.Type, dump(want), dump(got))
			}
		}
	}
	var ids []string
	for _, cs := range p.Status.ContainerStatuses {
		ids = append(ids, strings.TrimPrefix(cs.ContainerID, "containerd://"))
	}
	slices.Sort(ids)
	ctrs := e.Containers(t, uidLabels(string(p.UID)))
	if got := idSet(ctrs); !slices.Equal(got, ids) {
		t.Errorf("pod %s runtime containers %v, want %v", p.Name, got, ids)
	}
	for _, c := range ctrs {
		if c.State != runtime.ContainerRunning {
			t.Errorf("pod %s container %s is %s in the runtime", p.Name, c.ID, c.State)
		}
	}
}

// managedContainerdPid returns the PID of the agent's containerd or fails.
func (e *Env) managedContainerdPid(t *testing.T) int {
	t.Helper()
	pid := e.findManagedContainerd()
	if pid == 0 {
		t.Fatal("no containerd child of the agent with the root's config")
	}
	return pid
}

// findManagedContainerd returns the PID of the live process that is a
// child of the running agent and runs containerd with the root's config,
// or 0.
func (e *Env) findManagedContainerd() int {
	if e.agent == nil {
		return 0
	}
	agent := e.agent.cmd.Process.Pid
	config := filepath.Join(e.s.Root, "containerd", "config.toml")
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) < 3 || filepath.Base(args[0]) != "containerd" || !slices.Contains(args, config) {
			continue
		}
		if ppid, state := procParent(pid); ppid == agent && state != "Z" {
			return pid
		}
	}
	return 0
}

// procParent returns the parent PID and state of pid from /proc/pid/stat.
func procParent(pid int) (int, string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:]) // state ppid ...
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid, f[0]
}
