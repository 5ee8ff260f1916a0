package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// termLogger runs until SIGTERM, which it logs (after the current sleep).
const termLogger = `trap 'echo got-TERM; exit 0' TERM; echo started; while true; do sleep 1; done`

func TestLivenessRestartRunsPreStop_B17_C4_C6(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "live-prestop.yaml", podSpec("live-prestop", []string{"terminationGracePeriodSeconds: 10"}, nil, []string{
		container("app", busyboxImage, []string{"sh", "-c", termLogger}, nil,
			fastProbe("livenessProbe", execBad, 1),
			// The hook's output goes to the container's log through PID 1's stdout.
			`lifecycle: {preStop: {exec: {command: ["sh", "-c", "echo prestop-ran > /proc/1/fd/1"]}}}`),
	}))
	name := PodName("live-prestop")
	tr := newContainerTracker(e, name, "app")
	var firstLog string
	tr.until(t, lifecycleTimeout, "first container not seen exited", func() bool {
		r := tr.attempts[0]
		if r == nil {
			return false
		}
		// Read the log while the container is known: the agent prunes it
		// once the second restart happens.
		if st := e.ContainerStatus(t, r.ID); st != nil {
			firstLog = logText(t, st.LogPath)
		}
		return r.Exited
	})
	p := e.WaitForPod(t, name, containerCond("app", restartCountAtLeast(1)), lifecycleTimeout)
	e.WaitForEvent(t, p, ctr("app"), "Killing", "Container app failed liveness probe, will be restarted", 10*time.Second)

	hook, term := strings.Index(firstLog, "prestop-ran"), strings.Index(firstLog, "got-TERM")
	if hook < 0 || term < 0 || hook > term {
		t.Errorf("log of the killed container:\n%s\nwant prestop-ran (the preStop hook) before got-TERM (the stop signal)", firstLog)
	}
	if r := tr.attempts[0]; r.ExitCode != 0 {
		t.Errorf("killed container exited with %d, want 0 (its TERM trap; no SIGKILL)", r.ExitCode)
	}
}

func TestPostStartBlocksRunning_C2_C3_A8(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "slow-hook.yaml", podSpec("slow-hook", []string{"terminationGracePeriodSeconds: 5"}, nil, []string{
		sleeper("app", `lifecycle: {postStart: {exec: {command: ["sh", "-c", "sleep 3"]}}}`),
	}))
	name := PodName("slow-hook")
	tr := newContainerTracker(e, name, "app")
	var runningSeen time.Time
	sawHeldBack := false
	tr.until(t, podStartTimeout, "status never showed the container running", func() bool {
		p, err := e.findPod(name)
		if err != nil || p == nil {
			return false
		}
		st := containerStatus(p, "app")
		r := tr.attempts[0]
		if st == nil || r == nil || !r.SeenRunning {
			return false
		}
		if st.State.Running != nil {
			runningSeen = time.Now()
			return true
		}
		// The runtime runs the container, its hook has not finished.
		sawHeldBack = true
		if w := st.State.Waiting; w == nil || w.Reason != "ContainerCreating" || p.Status.Phase != v1.PodPending || st.Ready {
			t.Errorf("during postStart: state %s phase %s ready %t, want Waiting ContainerCreating, Pending, not ready",
				dump(st.State), p.Status.Phase, st.Ready)
		}
		return false
	})
	started := tr.attempts[0].StartedAt
	t.Logf("container started at %s, status Running seen %s later", started.Format(time.RFC3339Nano), runningSeen.Sub(started))
	if !sawHeldBack {
		t.Errorf("never saw the status hold the running container back while its postStart hook ran")
	}
	if d := runningSeen.Sub(started); d < 2500*time.Millisecond {
		t.Errorf("status Running %s after the container started; the 3s postStart hook must finish first", d)
	}
	p := e.WaitForPod(t, name, runningAndReady, 10*time.Second)
	if st := statusOf(t, p, "app"); !st.State.Running.StartedAt.Time.Equal(started.Truncate(time.Second)) {
		t.Errorf("running startedAt %s, want the runtime's start %s", st.State.Running.StartedAt, started)
	}
}

func TestPostStartHookFailure_C9_C10_A14(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "bad-hook.yaml", podSpec("bad-hook", []string{"terminationGracePeriodSeconds: 5"}, nil, []string{
		sleeper("app", `lifecycle: {postStart: {exec: {command: ["sh", "-c", "echo hook-out; exit 3"]}}}`),
	}))
	name := PodName("bad-hook")
	p := e.WaitForPod(t, name, containerCond("app", waitingReason("PostStartHookError")), podStartTimeout)
	want := fmt.Sprintf(`Exec lifecycle hook ([sh -c echo hook-out; exit 3]) for Container "app" in Pod "%s" failed - error: `+
		`command 'sh -c echo hook-out; exit 3' exited with 3: , message: "hook-out\n"`, kubeletPodDesc(p))
	if got := statusOf(t, p, "app").State.Waiting.Message; got != want {
		t.Errorf("PostStartHookError message\n got %q\nwant %q", got, want)
	}
	// Upstream records no hook output in the event (it may hold secrets).
	ev := e.WaitForEvent(t, p, ctr("app"), "FailedPostStartHook", "PostStartHook failed", 10*time.Second)
	if ev.Type != v1.EventTypeWarning {
		t.Errorf("FailedPostStartHook event type %s, want Warning", ev.Type)
	}
	e.WaitForEvent(t, p, ctr("app"), "Killing", "FailedPostStartHook", 10*time.Second)

	// The container is killed and restarted with back-off.
	p = e.WaitForPod(t, name, containerCond("app", waitingReason("CrashLoopBackOff")), lifecycleTimeout)
	st := statusOf(t, p, "app")
	if st.RestartCount < 1 || st.LastTerminationState.Terminated == nil {
		t.Errorf("in back-off: restartCount %d lastState %s, want a restart and the killed run", st.RestartCount, dump(st.LastTerminationState))
	}
	e.WaitForEvent(t, p, ctr("app"), "BackOff", "Back-off restarting failed container app", 10*time.Second)
	if n := len(e.Containers(t, podLabels(name))); n > 2 {
		t.Errorf("%d containers of the pod exist, want at most the current and the previous one", n)
	}
}

// stopWatch is what watchStops saw of one container after its pod's
// manifest was removed, and what containerd and the container's log said.
type stopWatch struct {
	id           string
	log          *os.File  // the container's log, held open (openLog)
	lastRunning  time.Time // last poll that saw it running
	end          time.Time // when containerd saw it exit
	exitCode     uint32    // as containerd reported it
	sigterm      time.Time // log time of the test server's SIGTERM line
	sigtermFound bool
}

// TestPreStopSleepThenSIGTERMWithinGrace_A42_A44_A45_C4_C8_C13 deletes three
// pods at once: polite (preStop sleep 3s, exits on SIGTERM), stubborn (the
// same, ignores SIGTERM: SIGKILL when the 10s grace shared with the hook is
// spent) and hung (grace 3s, a preStop exec that never ends: SIGTERM when
// the grace is spent, SIGKILL after the one-off 2s extension).
func TestPreStopSleepThenSIGTERMWithinGrace_A42_A44_A45_C4_C8_C13(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	exits := e.watchExits(t)
	preStop := `lifecycle: {preStop: {sleep: {seconds: 3}}}`
	grace := []string{"terminationGracePeriodSeconds: 10"}
	e.WriteManifest(t, "polite.yaml", podSpec("polite", grace, nil, []string{
		testserver("app", 8080, 0, 0, nil, preStop)}))
	e.WriteManifest(t, "stubborn.yaml", podSpec("stubborn", grace, nil, []string{
		testserver("app", 8080, 0, 0, []string{"--ignore-sigterm"}, preStop)}))
	e.WriteManifest(t, "hung.yaml", podSpec("hung", []string{"terminationGracePeriodSeconds: 3"}, nil, []string{
		testserver("app", 8080, 0, 0, []string{"--ignore-sigterm"},
			`lifecycle: {preStop: {exec: {command: ["sleep", "30"]}}}`)}))
	watches := map[string]*stopWatch{}
	for _, pod := range []string{"polite", "stubborn", "hung"} {
		e.WaitForPod(t, PodName(pod), runningAndReady, podStartTimeout)
		c := e.PodContainer(t, PodName(pod), "app")
		watches[pod] = &stopWatch{id: c.ID, log: openLog(t, c.LogPath)}
	}

	removed := time.Now()
	e.RemoveManifest(t, "polite.yaml")
	e.RemoveManifest(t, "stubborn.yaml")
	e.RemoveManifest(t, "hung.yaml")
	e.watchStops(t, watches, exits)
	for pod, w := range watches {
		t.Logf("%s: SIGTERM logged at +%s (found %t), last running +%s, ended +%s, exit %d", pod,
			w.sigterm.Sub(removed), w.sigtermFound, w.lastRunning.Sub(removed), w.end.Sub(removed), w.exitCode)
	}

	// polite: preStop sleeps 3s, then SIGTERM stops it at once.
	polite := watches["polite"]
	if alive := polite.lastRunning.Sub(removed); alive < 2500*time.Millisecond {
		t.Errorf("polite: stopped %s after deletion; the 3s preStop sleep must run before SIGTERM", alive)
	}
	if !polite.sigtermFound {
		t.Errorf("polite: the test server never logged SIGTERM")
	} else if d := polite.sigterm.Sub(removed); d < 2500*time.Millisecond || d > 7*time.Second {
		t.Errorf("polite: SIGTERM %s after deletion, want ~3s (after the preStop sleep)", d)
	}
	if d := polite.end.Sub(removed); d > 8*time.Second {
		t.Errorf("polite: ended %s after deletion, want soon after the 3s preStop sleep", d)
	}
	if polite.exitCode != 0 {
		t.Errorf("polite: exit code %d, want 0 (SIGTERM handled)", polite.exitCode)
	}

	// stubborn: SIGTERM after the preStop at ~3s, SIGKILL when the shared
	// 10s budget is spent.
	stubborn := watches["stubborn"]
	if !stubborn.sigtermFound {
		t.Errorf("stubborn: the test server never logged SIGTERM")
	} else if d := stubborn.sigterm.Sub(removed); d < 2500*time.Millisecond || d > 7*time.Second {
		t.Errorf("stubborn: SIGTERM %s after deletion, want ~3s (after the preStop sleep)", d)
	}
	if d := stubborn.end.Sub(removed); d < 9*time.Second || d > 16*time.Second {
		t.Errorf("stubborn: killed %s after deletion, want ~10s (grace shared with the preStop hook)", d)
	}
	if stubborn.exitCode != 137 {
		t.Errorf("stubborn: exit code %d, want 137 (SIGKILL)", stubborn.exitCode)
	}

	// hung: the preStop hook is abandoned when the 3s grace is spent, then
	// SIGTERM and SIGKILL 2s later (A.45).
	hung := watches["hung"]
	if !hung.sigtermFound {
		t.Errorf("hung: the test server never logged SIGTERM")
	} else if d := hung.sigterm.Sub(removed); d < 2500*time.Millisecond || d > 7*time.Second {
		t.Errorf("hung: SIGTERM %s after deletion, want ~3s (grace spent in the preStop hook)", d)
	}
	if d := hung.end.Sub(removed); d < 4500*time.Millisecond || d > 11*time.Second {
		t.Errorf("hung: killed %s after deletion, want ~5s (3s grace + 2s extension)", d)
	}
	if hung.exitCode != 137 {
		t.Errorf("hung: exit code %d, want 137 (SIGKILL)", hung.exitCode)
	}
}

// watchStops polls the containers every 50 ms until all have exited or
// are gone, noting when each was last seen running; then it fills in
// each one's exit from exits and its SIGTERM line from its held log (if
// any). Every exit and log line is seen, however soon the agent removes
// the container and its log: a check on them is never skipped.
func (e *Env) watchStops(t *testing.T, ws map[string]*stopWatch, exits *exitLog) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	ended := map[string]bool{}
	for {
		open := 0
		for pod, w := range ws {
			if ended[pod] {
				continue
			}
			st := e.ContainerStatus(t, w.id)
			if st != nil && st.State != runtime.ContainerExited {
				w.lastRunning = time.Now()
				open++
				continue
			}
			ended[pod] = true
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers still running a minute after deletion: %s", dump(ws))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range ws {
		exit := exits.wait(t, w.id, time.Minute)
		w.end, w.exitCode = exit.at, exit.code
		if w.log != nil {
			w.sigterm, w.sigtermFound = heldLogLineTime(t, w.log, "received SIGTERM")
		}
	}
}
