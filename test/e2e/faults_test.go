package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/skiffnode/skiff/internal/testregistry"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/test/criproxy"
)

// The faults suite (issue 34): the runtime misbehaving under the agent.
// See faults_helpers_test.go for how it runs; make faults runs it.

// faultPod is the scenarios' pod: one busybox sleeper that stops at once.
func faultPod(name string) string {
	return podSpec(name, []string{"terminationGracePeriodSeconds: 2"}, nil, []string{sleeper("app")})
}

// convergeTimeout bounds how long the node may take to be whole again
// once a fault ends.
const convergeTimeout = 5 * time.Minute

// replaceOne removes one of the live manifests, chosen by rng, and writes
// a new pod in its place; it returns the new live set.
func (e *Env) replaceOne(t *testing.T, rng *rand.Rand, live []string, next int) []string {
	t.Helper()
	i := rng.IntN(len(live))
	e.RemoveManifest(t, live[i]+".yaml")
	name := fmt.Sprintf("churn%d", next)
	e.WriteManifest(t, name+".yaml", faultPod(name))
	return append(slices.Delete(live, i, i+1), name)
}

// TestFaultsCRIErrorsUnderChurn: 5 % of every CRI call fails
// (Unavailable, DeadlineExceeded or Unknown, before reaching the runtime or
// after it did the work) while one pod is replaced every few seconds. When
// the errors stop, the node converges to the desired pods with nothing
// leaked, and the agent holds no more goroutines or files than before.
func TestFaultsCRIErrorsUnderChurn(t *testing.T) {
	e, sc := faultsEnv(t)
	proxy, args := e.startCRIProxy(t, 34)
	e.StartAgent(t, AgentOptions{Args: args})
	var live []string
	for i := range sc.churnPods {
		name := fmt.Sprintf("churn%d", i)
		e.WriteManifest(t, name+".yaml", faultPod(name))
		live = append(live, name)
	}
	before, _ := e.waitConverged(t, sc.churnPods, convergeTimeout)
	proxy.SetFaults(
		criproxy.Fault{Rate: 0.0125, Code: codes.Unavailable},
		criproxy.Fault{Rate: 0.0125, Code: codes.DeadlineExceeded, Reached: true},
		criproxy.Fault{Rate: 0.0125, Code: codes.Unknown},
		criproxy.Fault{Rate: 0.0125, Code: codes.Unknown, Reached: true},
	)
	rng := rand.New(rand.NewPCG(34, 1))
	next, end := sc.churnPods, time.Now().Add(sc.churnFor)
	for time.Now().Before(end) {
		live = e.replaceOne(t, rng, live, next)
		next++
		time.Sleep(sc.churnEvery)
	}
	proxy.SetFaults()
	after, took := e.waitConverged(t, sc.churnPods, convergeTimeout)
	checkNoGrowth(t, before, after)
	calls, hit := 0, 0
	for _, s := range proxy.Stats() {
		calls, hit = calls+s.Calls, hit+s.Hit
	}
	e.report(t, faultRecord{scenario: "CRI errors under churn", scale: sc.name, pods: sc.churnPods, restarts: after.restarts,
		recovery: took.Round(100 * time.Millisecond).String(),
		notes: fmt.Sprintf("%s of 5 %% errors, %d pods replaced; %d of %d CRI calls failed; goroutines %d -> %d, fds %d -> %d",
			sc.churnFor, next-sc.churnPods, hit, calls, before.goroutines, after.goroutines, before.fds, after.fds)})
}

// TestFaultsRunPodSandboxHangs: RunPodSandbox creates the sandbox but its
// answer comes after the agent's deadline (twice --runtime-request-timeout
// for this call, as the kubelet's). The pod still starts, in that sandbox
// or a new one, and no other sandbox is left with its network namespace
// and IP.
func TestFaultsRunPodSandboxHangs(t *testing.T) {
	e, sc := faultsEnv(t)
	proxy, args := e.startCRIProxy(t, 1)
	proxy.SetFaults(criproxy.Fault{Methods: []string{"RunPodSandbox"}, Reached: true, Hold: 20 * time.Second, Times: 1})
	e.StartAgent(t, AgentOptions{Args: append(args, "--runtime-request-timeout", "8s")})
	start := time.Now()
	e.WriteManifest(t, "hang.yaml", faultPod("hang"))
	e.WaitForPod(t, PodName("hang"), runningAndReady, 3*time.Minute)
	running := time.Since(start)
	s, took := e.waitConverged(t, 1, convergeTimeout)
	e.report(t, faultRecord{scenario: "RunPodSandbox answers after the timeout", scale: sc.name, pods: 1, restarts: s.restarts,
		recovery: (running + took).Round(100 * time.Millisecond).String(),
		notes:    fmt.Sprintf("timeout 8 s, answer held 20 s; pod Running after %s", running.Round(100*time.Millisecond))})
}

// TestFaultsStopFailsThenSucceeds: StopContainer fails three times and
// StopPodSandbox twice; deleting the pod still removes it and everything
// it held.
func TestFaultsStopFailsThenSucceeds(t *testing.T) {
	e, sc := faultsEnv(t)
	proxy, args := e.startCRIProxy(t, 1)
	e.StartAgent(t, AgentOptions{Args: args})
	e.WriteManifest(t, "stop.yaml", faultPod("stop"))
	e.waitConverged(t, 1, convergeTimeout)
	proxy.SetFaults(
		criproxy.Fault{Methods: []string{"StopContainer"}, Code: codes.Unknown, Times: 3},
		criproxy.Fault{Methods: []string{"StopPodSandbox"}, Code: codes.Unavailable, Times: 2},
	)
	start := time.Now()
	e.RemoveManifest(t, "stop.yaml")
	e.WaitForPodGone(t, PodName("stop"), 3*time.Minute)
	e.waitConverged(t, 0, convergeTimeout)
	took := time.Since(start)
	st := proxy.Stats()
	if st["StopContainer"].Hit != 3 || st["StopPodSandbox"].Hit != 2 {
		t.Errorf("faults hit StopContainer %+v, StopPodSandbox %+v; want 3 and 2", st["StopContainer"], st["StopPodSandbox"])
	}
	e.report(t, faultRecord{scenario: "StopContainer fails 3 times, StopPodSandbox 2", scale: sc.name, pods: 1,
		recovery: took.Round(100 * time.Millisecond).String(),
		notes:    "pod gone and nothing left after the retries"})
}

// TestFaultsImagePullCutMidway: the runtime's pull is cut while it is
// downloading (the registry holds the blob); the pod shows the failure,
// and the next try after the back-off pulls the image and runs.
func TestFaultsImagePullCutMidway(t *testing.T) {
	e, sc := faultsEnv(t)
	reg := startRegistry(t, testregistry.Options{PlainHTTP: true})
	pushed := pushUnique(t, reg, "e2e/faultpull:1")
	t.Cleanup(func() { removeImagesFrom(t, reg.Host) })
	proxy, args := e.startCRIProxy(t, 1)
	proxy.SetFaults(criproxy.Fault{Methods: []string{"PullImage"}, Reached: true, Cut: 3 * time.Second, Code: codes.Unavailable, Times: 1})
	reg.SetFault(testregistry.HangBlobs)
	hanging := reg.Hanging()
	e.StartAgent(t, AgentOptions{Args: args})
	start := time.Now()
	e.WriteManifest(t, "pull.yaml", podSpec("pull", []string{"terminationGracePeriodSeconds: 2"}, nil,
		[]string{container("app", pushed.Ref, []string{"sh", "-c", sleepLoop}, nil)}))
	select {
	case <-hanging:
	case <-time.After(2 * time.Minute):
		t.Fatal("the runtime never started downloading the image")
	}
	p := e.WaitForPod(t, PodName("pull"), containerCond("app", waitingReason("ErrImagePull")), time.Minute)
	if ev := e.WaitForEvent(t, p, ctr("app"), "Failed", "cut part way", 30*time.Second); ev == nil {
		t.Error("no Failed event naming the cut pull")
	}
	reg.SetFault(testregistry.FaultNone)
	e.WaitForPod(t, PodName("pull"), runningAndReady, 2*time.Minute)
	s, _ := e.waitConverged(t, 1, convergeTimeout)
	e.report(t, faultRecord{scenario: "PullImage cut mid-download", scale: sc.name, pods: 1, restarts: s.restarts,
		recovery: time.Since(start).Round(100 * time.Millisecond).String(),
		notes:    fmt.Sprintf("ErrImagePull, then pulled after the back-off; %d PullImage calls", proxy.Stats()["PullImage"].Calls)})
}

// TestFaultsSlowRuntime: every CRI call takes 3 s for a while. The agent's
// API stays responsive (it never waits for the runtime to serve /pods),
// /healthz still answers 200 as the runtime does answer, no pod is
// restarted, and the node is whole once the runtime is fast again.
func TestFaultsSlowRuntime(t *testing.T) {
	e, sc := faultsEnv(t)
	proxy, args := e.startCRIProxy(t, 1)
	e.StartAgent(t, AgentOptions{Args: args})
	const pods = 5
	for i := range pods {
		e.WriteManifest(t, fmt.Sprintf("slow%d.yaml", i), faultPod(fmt.Sprintf("slow%d", i)))
	}
	before, _ := e.waitConverged(t, pods, convergeTimeout)
	proxy.SetFaults(criproxy.Fault{Delay: 3 * time.Second})
	relists := e.metricValue(t, "kubelet_pleg_relist_duration_seconds_count")
	var worstPods, worstHealth time.Duration
	healthFailures := 0
	for end := time.Now().Add(sc.slowFor); time.Now().Before(end); time.Sleep(time.Second) {
		t0 := time.Now()
		list, err := e.Pods()
		worstPods = max(worstPods, time.Since(t0))
		if err != nil || len(list.Items) != pods {
			t.Fatalf("GET /pods with a slow runtime: %v", err)
		}
		for i := range list.Items {
			if !runningAndReady(&list.Items[i]) {
				t.Errorf("pod %s not Ready with a slow runtime", list.Items[i].Name)
			}
		}
		t0 = time.Now()
		code, _, err := e.get("/healthz")
		worstHealth = max(worstHealth, time.Since(t0))
		if err != nil || code != 200 {
			healthFailures++
		}
	}
	// The sync loop kept turning: its heartbeat, which the systemd
	// watchdog follows (docs/agent.md), stayed fresh.
	relists = e.metricValue(t, "kubelet_pleg_relist_duration_seconds_count") - relists
	proxy.SetFaults()
	if relists < sc.slowFor.Seconds()/10 {
		t.Errorf("%v relists in %s of a 3 s runtime, want the loop to keep turning (a relist is 2 calls)", relists, sc.slowFor)
	}
	if worstPods > time.Second {
		t.Errorf("GET /pods took up to %s with a slow runtime, want under 1 s", worstPods)
	}
	if healthFailures > 0 {
		t.Errorf("/healthz failed %d times while the runtime answered in 3 s (its bound is 5 s)", healthFailures)
	}
	after, took := e.waitConverged(t, pods, convergeTimeout)
	if after.restarts != before.restarts {
		t.Errorf("restarts %d -> %d with a slow runtime", before.restarts, after.restarts)
	}
	e.report(t, faultRecord{scenario: "every CRI call 3 s slow", scale: sc.name, pods: pods, restarts: after.restarts - before.restarts,
		recovery: took.Round(100 * time.Millisecond).String(),
		notes: fmt.Sprintf("%s slow; GET /pods at most %s, /healthz at most %s; %v relists meanwhile (the watchdog's heartbeat)", sc.slowFor,
			worstPods.Round(time.Millisecond), worstHealth.Round(10*time.Millisecond), relists)})
}

// TestFaultsRuntimeKilled (the kubelet's restart_test.go "should recover
// from ip leak" and containerd's TestContainerdRestart): the runtime is
// killed repeatedly under many pods. Each time a new pod runs soon after,
// and at the end no pod was restarted or recreated and no IP leaked.
func TestFaultsRuntimeKilled(t *testing.T) {
	e, sc := faultsEnv(t)
	e.StartAgent(t, AgentOptions{})
	for i := range sc.killPods {
		e.WriteManifest(t, fmt.Sprintf("kill%d.yaml", i), faultPod(fmt.Sprintf("kill%d", i)))
	}
	before, _ := e.waitConverged(t, sc.killPods, convergeTimeout)
	x := e.s.external
	var worst time.Duration
	var times []string
	for k := range sc.runtimeKills {
		pid := x.m.Pid()
		x.killed.Add(1)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 containerd %d: %v", pid, err)
		}
		killed := time.Now()
		name := fmt.Sprintf("after%d", k)
		e.WriteManifest(t, name+".yaml", faultPod(name))
		e.WaitForPod(t, PodName(name), runningAndReady, 3*time.Minute)
		back := time.Since(killed)
		worst, times = max(worst, back), append(times, back.Round(100*time.Millisecond).String())
		e.RemoveManifest(t, name+".yaml")
		e.WaitForPodGone(t, PodName(name), 2*time.Minute)
	}
	after, _ := e.waitConverged(t, sc.killPods, convergeTimeout)
	for uid, p := range before.pods { // not the sandboxes: containerd's stuck ones are no pod's
		sbs := before.sandboxes[uid]
		if got := after.sandboxes[uid]; len(sbs) != 1 || len(got) != 1 || got[0].ID != sbs[0].ID {
			t.Errorf("pod %s: sandboxes %v replaced by %v", p.Name, sbs, got)
		}
		if containerIDs(before.containers[uid]) != containerIDs(after.containers[uid]) {
			t.Errorf("pod %s: containers %s became %s", p.Name, containerIDs(before.containers[uid]), containerIDs(after.containers[uid]))
		}
	}
	if after.restarts != before.restarts {
		t.Errorf("restarts %d -> %d", before.restarts, after.restarts)
	}
	e.report(t, faultRecord{scenario: "runtime kill -9", scale: sc.name, pods: sc.killPods, restarts: after.restarts - before.restarts,
		recovery: "worst " + worst.Round(100*time.Millisecond).String(),
		notes:    fmt.Sprintf("%d kills; a new pod Running after %s", sc.runtimeKills, strings.Join(times, ", "))})
}

// containerIDs is the sorted IDs of cs, joined.
func containerIDs(cs []*runtime.Container) string {
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// metricValue reads an unlabelled sample from the agent's /metrics.
func (e *Env) metricValue(t *testing.T, name string) float64 {
	t.Helper()
	code, body, err := e.get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %q", name, line)
			}
			return f
		}
	}
	t.Fatalf("metric %s not in /metrics", name)
	return 0
}
