package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// fakeProber is a Prober whose results tests set by container name.
type fakeProber struct {
	mu       sync.Mutex
	notReady map[string]bool
	liveFail map[string]bool
	added    map[string]string // name -> container ID
}

func newFakeProber() *fakeProber {
	return &fakeProber{notReady: map[string]bool{}, liveFail: map[string]bool{}, added: map[string]string{}}
}

func (p *fakeProber) AddContainer(_ *v1.Pod, _ string, c *v1.Container, id string, _ time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.added[c.Name] != id {
		p.liveFail[c.Name] = false // a new container starts healthy
	}
	p.added[c.Name] = id
}
func (p *fakeProber) RemoveContainer(_ types.UID, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.added, name)
}
func (p *fakeProber) RemovePod(types.UID) {}
func (p *fakeProber) Ready(_ types.UID, name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.notReady[name]
}
func (p *fakeProber) Started(types.UID, string) bool { return true }
func (p *fakeProber) LivenessFailed(_ types.UID, name string) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.liveFail[name], "boom"
}
func (p *fakeProber) StartupFailed(types.UID, string) (bool, string) { return false, "" }

func (p *fakeProber) set(m map[string]bool, name string, v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m[name] = v
}

func startAgentWith(t *testing.T, rt runtime.Runtime, prober Prober) *harness {
	t.Helper()
	cfg := testConfig(t, rt)
	cfg.PodsDir = t.TempDir()
	cfg.Prober = prober
	return runTestAgent(t, cfg)
}

func (h *harness) hasEvent(reason, substr string) bool {
	for _, e := range h.agent.Events() {
		if e.Reason == reason && strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}

func containerWaiting(p *v1.Pod, name string) *v1.ContainerStateWaiting {
	if p == nil {
		return nil
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.State.Waiting
		}
	}
	return nil
}

func TestPostStartFailure_C4(t *testing.T) {
	rt := newFakeRuntime()
	rt.SetExec(func(_ string, cmd []string) (*runtime.ExecResult, error) {
		return &runtime.ExecResult{ExitCode: 1, Stderr: []byte("no")}, nil
	})
	h := startAgentWith(t, rt, newFakeProber())
	h.rt = rt
	pod := testPod("Always", nil, "a")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("CrashLoopBackOff after two postStart failures", func() bool {
		w := containerWaiting(h.pod("uid1"), "a")
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	w := containerWaiting(h.pod("uid1"), "a")
	if want := "back-off 10s restarting failed container=a pod=web-node_default(uid1)"; w.Message != want {
		t.Errorf("message %q, want %q", w.Message, want)
	}
	if !h.hasEvent(EventFailedPostStartHook, "PostStartHook failed") || !h.hasEvent(EventKilling, "FailedPostStartHook") ||
		!h.hasEvent(EventBackOff, "Back-off restarting failed container a in pod web-node_default(uid1)") {
		t.Errorf("events: %+v", h.agent.Events())
	}
	if p := h.pod("uid1"); p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running (A.5: restarting pods stay Running)", p.Status.Phase)
	}
}

func TestPreStopRunsBeforeStop_C6(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgentWith(t, rt, newFakeProber())
	h.rt = rt
	pod := testPod("Always", nil, "a")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.src.ch <- nil
	h.eventually("pod gone", func() bool { return h.pod("uid1") == nil })
	calls := rt.Calls()
	exec, stop := slices.Index(calls, "ExecSync a"), slices.Index(calls, "StopContainer a")
	if exec < 0 || stop < 0 || exec > stop {
		t.Errorf("preStop exec at %d, stop at %d; calls %v", exec, stop, calls)
	}
	if !h.hasEvent(EventKilling, "Stopping container a") {
		t.Errorf("no Killing event: %+v", h.agent.Events())
	}
}

func TestSidecarStopsAfterApp(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgentWith(t, rt, newFakeProber())
	h.rt = rt
	pod := sidecarPod([]string{"side"}, map[string]bool{"side": true}, "app")
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("app running", func() bool {
		c, ok := rt.ContainerByName("uid1", "app")
		return ok && c.State == runtime.ContainerRunning
	})
	h.src.ch <- nil
	h.eventually("pod gone", func() bool { return h.pod("uid1") == nil })
	calls := rt.Calls()
	app, side := slices.Index(calls, "StopContainer app"), slices.Index(calls, "StopContainer side")
	if app < 0 || side < 0 || app > side {
		t.Errorf("app stopped at %d, sidecar at %d; calls %v", app, side, calls)
	}
}

func TestLivenessFailureRestarts_B10(t *testing.T) {
	rt := newFakeRuntime()
	pr := newFakeProber()
	h := startAgentWith(t, rt, pr)
	h.rt = rt
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	pr.set(pr.liveFail, "a", true)
	h.eventually("restarted container", func() bool {
		c, ok := rt.ContainerByName("uid1", "a")
		return ok && c.Attempt == 1 && c.State == runtime.ContainerRunning
	})
	if !h.hasEvent(EventKilling, "Container a failed liveness probe, will be restarted") {
		t.Errorf("no Killing event: %+v", h.agent.Events())
	}
	h.eventually("restartCount 1", func() bool {
		p := h.pod("uid1")
		return p != nil && p.Status.ContainerStatuses[0].RestartCount == 1
	})
}

func TestReadinessDrivesReady_B8(t *testing.T) {
	rt := newFakeRuntime()
	pr := newFakeProber()
	pr.set(pr.notReady, "a", true)
	h := startAgentWith(t, rt, pr)
	h.rt = rt
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
	ready := func() bool {
		p := h.pod("uid1")
		c := findCondition(&p.Status, v1.PodReady)
		return c != nil && c.Status == v1.ConditionTrue
	}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if ready() {
		t.Fatal("pod Ready while its readiness probe fails")
	}
	pr.set(pr.notReady, "a", false)
	h.agent.WakeAll()
	h.eventually("Ready", ready)
	pr.set(pr.notReady, "a", true)
	h.agent.WakeAll()
	h.eventually("not Ready again", func() bool { return !ready() })
}

func TestExecAndStartEvents(t *testing.T) {
	rt := newFakeRuntime()
	rt.SetExec(func(name string, cmd []string) (*runtime.ExecResult, error) {
		return &runtime.ExecResult{Stdout: []byte(name + ":" + strings.Join(cmd, " ")), ExitCode: 3}, nil
	})
	h := startAgentWith(t, rt, newFakeProber())
	h.rt = rt
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	res, err := h.agent.Exec(context.Background(), "default", "web-node", "", []string{"echo", "hi"}, time.Second)
	if err != nil || string(res.Stdout) != "a:echo hi" || res.ExitCode != 3 {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	if _, err := h.agent.Exec(context.Background(), "default", "nope", "", nil, 0); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Exec in an unknown pod: %v, want an error wrapping runtime.ErrNotFound", err)
	}
	if _, err := h.agent.Exec(context.Background(), "default", "web-node", "nope", nil, 0); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Exec in an unknown container: %v, want an error wrapping runtime.ErrNotFound", err)
	}
	for _, want := range []struct{ reason, msg string }{
		{EventPulled, `Container image "img" already present on machine`},
		{EventCreated, "Created container: a"},
		{EventStarted, "Started container a"},
	} {
		if !h.hasEvent(want.reason, want.msg) {
			t.Errorf("missing event %s %q in %+v", want.reason, want.msg, h.agent.Events())
		}
	}
}
