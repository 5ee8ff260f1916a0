package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// chanSource is a Source whose pod sets the test pushes.
type chanSource struct{ ch chan []*v1.Pod }

func (s *chanSource) Run(ctx context.Context, sink func([]*v1.Pod)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case pods := <-s.ch:
			sink(pods)
		}
	}
}

type harness struct {
	t      *testing.T
	rt     *fake.Runtime
	src    *chanSource
	agent  *Agent
	cancel context.CancelFunc
	done   chan struct{}
}

func startAgent(t *testing.T, rt *fake.Runtime) *harness {
	t.Helper()
	return runTestAgent(t, testConfig(t, rt))
}

// testConfig is an agent Config on rt with fast relists and resyncs.
func testConfig(t *testing.T, rt runtime.Runtime) Config {
	return Config{
		NodeName: "node", Runtime: rt, PodLogsDir: t.TempDir(), HostIPs: []string{"192.0.2.1"},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		RelistPeriod: 10 * time.Millisecond, ResyncPeriod: 50 * time.Millisecond,
	}
}

// runTestAgent runs an agent with cfg and a test source until the test ends.
func runTestAgent(t *testing.T, cfg Config) *harness {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := cfg.Runtime.(*fake.Runtime)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, rt: rt, src: &chanSource{ch: make(chan []*v1.Pod, 1)}, agent: a, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		_ = a.Run(ctx, map[string]Source{"test": h.src})
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

// eventually polls cond; the deadline only guards against hangs.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; calls: %v", what, h.rt.Calls())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle waits until the agent listed the runtime n more times (relists
// and pod syncs), so that a check that nothing happened comes after the
// agent had n chances to act, however slow the machine.
func (h *harness) settle(n int) {
	h.t.Helper()
	want := h.rt.Listings() + n
	h.eventually(fmt.Sprintf("%d more listings of the runtime", n), func() bool { return h.rt.Listings() >= want })
}

func (h *harness) pod(uid string) *v1.Pod {
	for _, p := range h.agent.Pods() {
		if string(p.UID) == uid {
			return p
		}
	}
	return nil
}

func (h *harness) phase(uid string) v1.PodPhase {
	if p := h.pod(uid); p != nil {
		return p.Status.Phase
	}
	return ""
}

func newFakeRuntime() *fake.Runtime {
	rt := fake.New(time.Now)
	rt.AddImage("img")
	return rt
}

func TestAgentRunsInitThenApp_A24(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", []string{"init"}, "app")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("init container running", func() bool {
		c, ok := rt.ContainerByName("uid1", "init")
		return ok && c.State == runtime.ContainerRunning
	})
	if _, ok := rt.ContainerByName("uid1", "app"); ok {
		t.Fatal("app container created while init container runs")
	}
	c, _ := rt.ContainerByName("uid1", "init")
	rt.Exit(c.ID, 0)
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	p := h.pod("uid1")
	if p.Status.PodIP == "" || p.Status.HostIP != "192.0.2.1" {
		t.Errorf("podIP %q hostIP %q", p.Status.PodIP, p.Status.HostIP)
	}
	// No API server stamps static pods: the agent does, so AGE is known.
	if p.CreationTimestamp.IsZero() || p.Status.StartTime == nil || !p.CreationTimestamp.Equal(p.Status.StartTime) {
		t.Errorf("creationTimestamp %v, startTime %v: want both set and equal", p.CreationTimestamp, p.Status.StartTime)
	}
}

func TestAgentRestartAdoptsContainers(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "app")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	before := len(rt.Calls())
	h.stop()

	h2 := startAgent(t, rt)
	h2.src.ch <- []*v1.Pod{pod}
	h2.eventually("pod Running after restart", func() bool { return h2.phase("uid1") == v1.PodRunning })
	h2.settle(10) // a few relists and resyncs
	for _, c := range rt.Calls()[before:] {
		if !strings.HasPrefix(c, "ExecSync") {
			t.Errorf("agent restart changed the runtime: %s", c)
		}
	}
}

func TestAgentKillsOrphansAfterSourcesSync(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.stop()

	h2 := startAgent(t, rt)
	h2.src.ch <- []*v1.Pod{} // the manifest vanished while skiff was down
	h2.eventually("orphan removed", func() bool {
		_, ok := rt.ContainerByName("uid1", "app")
		return !ok
	})
}

func TestAgentTerminatesRemovedPod_A42(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.src.ch <- nil
	h.eventually("pod gone", func() bool { return h.pod("uid1") == nil })
	calls := strings.Join(rt.Calls(), "\n")
	for _, want := range []string{"StopContainer app", "RemoveContainer app", "StopSandbox", "RemoveSandbox"} {
		if !strings.Contains(calls, want) {
			t.Errorf("missing %q in calls:\n%s", want, calls)
		}
	}
	if strings.Index(calls, "StopContainer app") > strings.Index(calls, "StopSandbox") {
		t.Errorf("sandbox stopped before its containers:\n%s", calls)
	}
	if strings.Index(calls, "StopSandbox") > strings.Index(calls, "RemoveContainer app") {
		t.Errorf("containers removed before the sandbox stopped (the pod is down once stopped; removal comes after):\n%s", calls)
	}
	// The whole grace period goes to the runtime, not one second less for
	// the microseconds spent before the stop (A.43).
	if d, _ := rt.StopTimeout("app"); d != 30*time.Second {
		t.Errorf("StopContainer timeout %s, want the pod's 30s grace period", d)
	}
}

func TestAgentReplacementWaitsForOldPod(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	old := testPod("Always", nil, "app")
	h.src.ch <- []*v1.Pod{old}
	h.eventually("old pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	repl := testPod("Always", nil, "app")
	repl.UID = "uid2"
	h.src.ch <- []*v1.Pod{repl}
	h.eventually("new pod Running", func() bool { return h.phase("uid2") == v1.PodRunning })
	if h.pod("uid1") != nil {
		t.Error("old pod still listed")
	}
	calls := rt.Calls()
	var lastRemove, firstNewSandbox int
	var runSandboxes int
	for i, c := range calls {
		if strings.HasPrefix(c, "RemoveSandbox") {
			lastRemove = i
		}
		if strings.HasPrefix(c, "RunSandbox") {
			runSandboxes++
			if runSandboxes == 2 {
				firstNewSandbox = i
			}
		}
	}
	if firstNewSandbox < lastRemove {
		t.Errorf("replacement started before the old pod was removed: %v", calls)
	}
}

func TestAgentNeverPullMissingImage_A11(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "app")
	pod.Spec.Containers[0].Image = "missing:1"
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("ErrImageNeverPull", func() bool {
		p := h.pod("uid1")
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull" && strings.Contains(w.Message, `"missing:1"`)
	})
}

func TestAgentPodsIsSafeForConcurrentUse(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				for _, p := range h.agent.Pods() {
					p.Status.Phase = "mutated"
				}
			}
		}()
	}
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	wg.Wait()
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
}

// slowTeardown is a fake runtime whose StopSandbox takes a while and
// records how many ran at once.
type slowTeardown struct {
	*fake.Runtime
	mu        sync.Mutex
	now, most int
}

func (r *slowTeardown) StopSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	r.now++
	r.most = max(r.most, r.now)
	r.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	r.mu.Lock()
	r.now--
	r.mu.Unlock()
	return r.Runtime.StopSandbox(ctx, id)
}

// TestAgentBoundsSandboxTeardowns: pods removed at once have their
// sandboxes torn down at most MaxParallelStarts at a time (issue 5: all at
// once was slower than a few at a time).
func TestAgentBoundsSandboxTeardowns(t *testing.T) {
	rt := &slowTeardown{Runtime: newFakeRuntime()}
	cfg := testConfig(t, rt)
	cfg.MaxParallelStarts = 2
	h := runTestAgent(t, cfg)
	var pods []*v1.Pod
	for i := range 6 {
		p := testPod("Always", nil, "app")
		p.Name, p.UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid%d", i))
		pods = append(pods, p)
	}
	h.src.ch <- pods
	for _, p := range pods {
		h.eventually("pod Running", func() bool { return h.phase(string(p.UID)) == v1.PodRunning })
	}
	h.src.ch <- nil
	for _, p := range pods {
		h.eventually("pod gone", func() bool { return h.pod(string(p.UID)) == nil })
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.most > 2 {
		t.Errorf("%d sandbox teardowns at once, want at most 2 (MaxParallelStarts)", rt.most)
	}
}

// heldStops is a fake runtime whose StopSandbox calls each wait for a
// release after reporting that they started.
type heldStops struct {
	*fake.Runtime
	entered, release chan struct{}
}

func (r *heldStops) StopSandbox(ctx context.Context, id string) error {
	r.entered <- struct{}{}
	<-r.release
	return r.Runtime.StopSandbox(ctx, id)
}

// TestAgentTeardownStopsBeforeRemovals: with the teardown gate contended,
// a waiting sandbox stop goes before a waiting removal queued earlier, so
// every deleted pod is down before records are cleaned up.
func TestAgentTeardownStopsBeforeRemovals(t *testing.T) {
	rt := &heldStops{Runtime: newFakeRuntime(), entered: make(chan struct{}), release: make(chan struct{})}
	cfg := testConfig(t, rt)
	cfg.MaxParallelStarts = 1
	h := runTestAgent(t, cfg)
	pods := make([]*v1.Pod, 3)
	for i := range pods {
		pods[i] = testPod("Always", nil, "app")
		pods[i].Name, pods[i].UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid%d", i))
	}
	h.src.ch <- pods
	for _, p := range pods {
		h.eventually("pod Running", func() bool { return h.phase(string(p.UID)) == v1.PodRunning })
	}
	g := h.agent.teardowns
	h.src.ch <- pods[1:] // pod 0 goes: its sandbox stop holds the slot
	<-rt.entered
	h.src.ch <- pods[2:] // pod 1 goes: its stop waits
	waitQueued(t, g, prioStopSandbox, 1)
	rt.release <- struct{}{} // pod 0 stopped: pod 1's stop runs, pod 0's removal waits
	<-rt.entered
	waitQueued(t, g, prioRemove, 1)
	h.src.ch <- nil // pod 2 goes: its stop waits behind pod 1's, beside pod 0's removal
	waitQueued(t, g, prioStopSandbox, 1)
	rt.release <- struct{}{}
	<-rt.entered // pod 2's stop, before pod 0's removal
	calls := strings.Join(rt.Calls(), "\n")
	if strings.Contains(calls, "RemoveContainer") || strings.Contains(calls, "RemoveSandbox") {
		t.Errorf("a removal ran before the waiting sandbox stop:\n%s", calls)
	}
	rt.release <- struct{}{}
	for _, p := range pods {
		h.eventually("pod gone", func() bool { return h.pod(string(p.UID)) == nil })
	}
}

// heldObserve is a runtime whose per-pod sandbox listing (a worker's
// observe) waits until release is closed; the relister's listing does not.
type heldObserve struct {
	*fake.Runtime
	release chan struct{}
	waiting chan struct{} // receives once per observe that waits
}

func (r *heldObserve) ListSandboxes(ctx context.Context, labels map[string]string) ([]*runtime.Sandbox, error) {
	if labels[labelPodUID] != "" {
		select {
		case r.waiting <- struct{}{}:
		default:
		}
		select {
		case <-r.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.Runtime.ListSandboxes(ctx, labels)
}

// A restarted agent lists a pod that already runs with its observed status
// only: never the blank Pending placeholder of a new pod, whose missing
// Ready condition would read as not ready (issue 12: a restart never flips
// Ready, A.2).
func TestAgentRestartNeverListsRunningPodAsPending_A2(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "app")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.stop()

	held := &heldObserve{Runtime: rt, release: make(chan struct{}), waiting: make(chan struct{}, 1)}
	h2 := runTestAgent(t, testConfig(t, held))
	h2.src.ch <- []*v1.Pod{pod}
	<-held.waiting // the worker's first sync is waiting to observe the pod
	if p := h2.pod("uid1"); p != nil {
		t.Errorf("running pod listed before its first sync: phase %q, %d conditions", p.Status.Phase, len(p.Status.Conditions))
	}
	close(held.release)
	h2.eventually("pod Running after restart", func() bool { return h2.phase("uid1") == v1.PodRunning })
}
