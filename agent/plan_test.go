package agent

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default", UID: "uid1"}}
	p.Spec.RestartPolicy = policy
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img"})
	}
	return p
}

func sandboxReady(attempt uint32) *runtime.SandboxStatus {
	return &runtime.SandboxStatus{Sandbox: runtime.Sandbox{ID: "sb", Attempt: attempt, State: runtime.SandboxReady, CreatedAt: t0}, IP: "10.88.0.5"}
}

func running(name string, attempt uint32) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{
		Container: runtime.Container{ID: name + "-" + string(rune('0'+attempt)), SandboxID: "sb", Name: name, Attempt: attempt, State: runtime.ContainerRunning, CreatedAt: t0},
		StartedAt: t0,
	}
}

func exited(name string, attempt uint32, code int32, finished time.Time) *runtime.ContainerStatus {
	c := running(name, attempt)
	c.State, c.ExitCode, c.FinishedAt = runtime.ContainerExited, code, finished
	return c
}

func state(sb *runtime.SandboxStatus, cs ...*runtime.ContainerStatus) *podState {
	st := &podState{Containers: cs}
	if sb != nil {
		st.Sandboxes = []*runtime.SandboxStatus{sb}
	}
	sortState(st)
	return st
}

func TestComputePodActions(t *testing.T) {
	notReady := sandboxReady(0)
	notReady.State = runtime.SandboxNotReady
	tests := []struct {
		name      string
		pod       *v1.Pod
		st        *podState
		wantSB    bool
		wantAtt   uint32
		wantInit  int
		wantApps  []int
		wantTerm  bool
		wantStop  bool
		wantKill  int
		wantWaitN int
	}{
		{name: "new pod creates sandbox", pod: testPod("Always", nil, "app"), st: state(nil), wantSB: true, wantInit: -1},
		{name: "dead sandbox is recreated with next attempt (A.31)", pod: testPod("Always", []string{"i"}, "app"),
			st: state(notReady, exited("i", 0, 0, t0), running("app", 0)), wantSB: true, wantAtt: 1, wantInit: -1},
		{name: "first init container starts first (A.24)", pod: testPod("Always", []string{"i1", "i2"}, "app"),
			st: state(sandboxReady(0)), wantInit: 0},
		{name: "second init waits for first to finish (A.24)", pod: testPod("Always", []string{"i1", "i2"}, "app"),
			st: state(sandboxReady(0), running("i1", 0)), wantInit: -1},
		{name: "second init after first exits 0", pod: testPod("Always", []string{"i1", "i2"}, "app"),
			st: state(sandboxReady(0), exited("i1", 0, 0, t0)), wantInit: 1},
		{name: "apps start after all inits", pod: testPod("Always", []string{"i1"}, "a", "b"),
			st: state(sandboxReady(0), exited("i1", 0, 0, t0)), wantInit: -1, wantApps: []int{0, 1}},
		{name: "failed init with Never fails the pod (A.26)", pod: testPod("Never", []string{"i1"}, "a"),
			st: state(sandboxReady(0), exited("i1", 0, 1, t0)), wantInit: -1, wantTerm: true, wantStop: true},
		{name: "failed init with Always is retried like OnFailure (A.26)", pod: testPod("Always", []string{"i1"}, "a"),
			st: state(sandboxReady(0), exited("i1", 0, 1, t0)), wantInit: 0},
		{name: "running app: nothing to do", pod: testPod("Always", nil, "a"),
			st: state(sandboxReady(0), running("a", 0)), wantInit: -1},
		{name: "exited app restarts under Always (A.12)", pod: testPod("Always", nil, "a"),
			st: state(sandboxReady(0), exited("a", 0, 0, t0)), wantInit: -1, wantApps: []int{0}},
		{name: "OnFailure does not restart exit 0", pod: testPod("OnFailure", nil, "a", "b"),
			st: state(sandboxReady(0), exited("a", 0, 0, t0), running("b", 0)), wantInit: -1},
		{name: "OnFailure restarts a failure", pod: testPod("OnFailure", nil, "a"),
			st: state(sandboxReady(0), exited("a", 0, 3, t0)), wantInit: -1, wantApps: []int{0}},
		{name: "Never with all apps exited is terminal", pod: testPod("Never", nil, "a", "b"),
			st: state(sandboxReady(0), exited("a", 0, 0, t0), exited("b", 0, 2, t0)), wantInit: -1, wantTerm: true, wantStop: true},
		{name: "terminal pod with stopped sandbox does nothing", pod: testPod("Never", nil, "a"),
			st: state(notReady, exited("a", 0, 0, t0)), wantInit: -1, wantTerm: true},
		{name: "unknown running container is killed (A.4 own objects only)", pod: testPod("Always", nil, "a"),
			st: state(sandboxReady(0), running("a", 0), running("ghost", 0)), wantInit: -1, wantKill: 1},
		{name: "container stuck in Created is replaced", pod: testPod("Always", nil, "a"),
			st: func() *podState {
				c := running("a", 0)
				c.State = runtime.ContainerCreated
				return state(sandboxReady(0), c)
			}(), wantInit: -1, wantKill: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := computePodActions(tt.pod, tt.st, t0.Add(time.Minute), newBackoff(), planExtras{})
			if a.CreateSandbox != tt.wantSB || a.SandboxAttempt != tt.wantAtt {
				t.Errorf("CreateSandbox=%v attempt=%d, want %v %d", a.CreateSandbox, a.SandboxAttempt, tt.wantSB, tt.wantAtt)
			}
			if a.StartInit != tt.wantInit {
				t.Errorf("StartInit=%d, want %d", a.StartInit, tt.wantInit)
			}
			if len(a.StartApp) != len(tt.wantApps) {
				t.Fatalf("StartApp=%v, want %v", a.StartApp, tt.wantApps)
			}
			for i := range a.StartApp {
				if a.StartApp[i] != tt.wantApps[i] {
					t.Errorf("StartApp=%v, want %v", a.StartApp, tt.wantApps)
				}
			}
			if a.Terminal != tt.wantTerm || a.StopSandbox != tt.wantStop {
				t.Errorf("Terminal=%v StopSandbox=%v, want %v %v", a.Terminal, a.StopSandbox, tt.wantTerm, tt.wantStop)
			}
			if len(a.Kill) != tt.wantKill {
				t.Errorf("Kill=%d, want %d", len(a.Kill), tt.wantKill)
			}
		})
	}
}

// TestRestartBackoffSchedule_A13 walks a crash-looping container through
// the whole schedule: immediate first restart, then 10s, 20s ... 300s.
func TestRestartBackoffSchedule_A13(t *testing.T) {
	pod := testPod("Always", nil, "a")
	bo := newBackoff()
	now := t0
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		w *= time.Second
		st := state(sandboxReady(0), exited("a", uint32(i), 1, now))
		a := computePodActions(pod, st, now, bo, planExtras{})
		if w == 0 {
			if len(a.StartApp) != 1 {
				t.Fatalf("crash %d: want immediate restart, got %+v", i, a)
			}
		} else {
			ws, ok := a.Waiting["a"]
			if !ok || ws.Reason != "CrashLoopBackOff" || a.RequeueAfter != w {
				t.Fatalf("crash %d: want CrashLoopBackOff for %s, got %+v requeue %s", i, w, a.Waiting, a.RequeueAfter)
			}
			wantMsg := "back-off " + w.String() + " restarting failed container=a pod=web-node_default(uid1)"
			if ws.Message != wantMsg {
				t.Errorf("message %q, want %q", ws.Message, wantMsg)
			}
			now = now.Add(w)
			a = computePodActions(pod, st, now, bo, planExtras{})
			if len(a.StartApp) != 1 {
				t.Fatalf("crash %d: want restart after %s, got %+v", i, w, a)
			}
		}
		from, ok := a.BackoffFrom["a"]
		if !ok || !from.Equal(st.Containers[0].FinishedAt) {
			t.Fatalf("crash %d: BackoffFrom %v, want the exit %s", i, a.BackoffFrom, st.Containers[0].FinishedAt)
		}
		bo.next(restartBackoffKey(&v1.Container{Name: "a", Image: "img"}), from, now)
	}
}

// TestBackoffResetsAfterTenMinutes_A13: a container that ran 10 minutes
// without a problem restarts at once again.
func TestBackoffResetsAfterTenMinutes_A13(t *testing.T) {
	bo := newBackoff()
	key := restartBackoffKey(&v1.Container{Name: "a", Image: "img"})
	bo.next(key, t0, t0)
	bo.next(key, t0, t0)
	if d := bo.delay(key); d != 20*time.Second {
		t.Fatalf("delay %s, want 20s", d)
	}
	// flowcontrol measures staleness from the exit, not from now.
	if _, in := bo.inBackOffSince(key, t0.Add(10*time.Minute), t0.Add(10*time.Minute+5*time.Second)); !in {
		t.Fatalf("exit 10 minutes after the last restart: want back-off still on")
	}
	later := t0.Add(10*time.Minute + time.Second)
	if u, in := bo.inBackOffSince(key, later, later); in {
		t.Fatalf("after 10 minutes want no back-off, got until %s", u)
	}
	bo.next(key, later, later)
	if d := bo.delay(key); d != 10*time.Second {
		t.Fatalf("restart after a stale entry: delay %s, want 10s", d)
	}
}

// TestPlanDefinitionChanged_H1: a running app container or sidecar created
// from another image of its spec (an API pod's image edited) is killed and
// restarted, as the kubelet's computePodActions does; a regular init
// container, an exited container and a container without the hash
// annotation (created by an older skiff) are left alone.
func TestPlanDefinitionChanged_H1(t *testing.T) {
	withHash := func(cs *runtime.ContainerStatus, image string) *runtime.ContainerStatus {
		cs.Annotations = map[string]string{annotationHash: containerHash(&v1.Container{Name: cs.Name, Image: image})}
		return cs
	}
	sidecarPod := func() *v1.Pod {
		p := testPod("Always", []string{"side"}, "a")
		always := v1.ContainerRestartPolicyAlways
		p.Spec.InitContainers[0].RestartPolicy = &always
		return p
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		st       *podState
		wantKill []string
	}{
		{"same image", testPod("Always", nil, "a"),
			state(sandboxReady(0), withHash(running("a", 0), "img")), nil},
		{"app image changed", testPod("Always", nil, "a", "b"),
			state(sandboxReady(0), withHash(running("a", 0), "old"), withHash(running("b", 0), "img")), []string{"a"}},
		{"under restartPolicy Never too", testPod("Never", nil, "a"),
			state(sandboxReady(0), withHash(running("a", 0), "old")), []string{"a"}},
		{"sidecar image changed", sidecarPod(),
			state(sandboxReady(0), withHash(running("side", 0), "old"), withHash(running("a", 0), "img")), []string{"side"}},
		{"running init container is not restarted", testPod("Always", []string{"i"}, "a"),
			state(sandboxReady(0), withHash(running("i", 0), "old")), nil},
		{"no hash annotation: unchanged", testPod("Always", nil, "a"),
			state(sandboxReady(0), running("a", 0)), nil},
		{"exited container is not killed", testPod("Never", nil, "a", "b"),
			state(sandboxReady(0), withHash(exited("a", 0, 0, t0), "old"), withHash(running("b", 0), "img")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := computePodActions(tt.pod, tt.st, t0.Add(time.Minute), newBackoff(), planExtras{})
			var got []string
			for _, u := range a.Unhealthy {
				got = append(got, u.Container.Name)
				want := "Container " + u.Container.Name + " definition changed, will be restarted"
				if u.Message != want || !u.Restart || u.Grace != nil {
					t.Errorf("kill %+v, want message %q, restart, pod grace", u, want)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.wantKill, ",") {
				t.Errorf("killed %v, want %v", got, tt.wantKill)
			}
		})
	}
}

// TestBackoffKeyedByDefinition_A13: a crash-looping container held back by
// its back-off restarts at once when its image changes (the back-off is
// keyed by the definition's hash, as the kubelet's), and is held back
// again under the old image.
func TestBackoffKeyedByDefinition_A13(t *testing.T) {
	pod := testPod("Always", nil, "a")
	bo := newBackoff()
	exit := t0.Add(time.Minute)
	bo.next(restartBackoffKey(&pod.Spec.Containers[0]), exit, exit)
	bo.next(restartBackoffKey(&pod.Spec.Containers[0]), exit, exit)
	st := state(sandboxReady(0), exited("a", 2, 1, exit))
	now := exit.Add(time.Second)
	if a := computePodActions(pod, st, now, bo, planExtras{}); len(a.StartApp) != 0 || a.Waiting["a"].Reason != "CrashLoopBackOff" {
		t.Fatalf("old image: StartApp %v waiting %+v, want CrashLoopBackOff", a.StartApp, a.Waiting)
	}
	pod.Spec.Containers[0].Image = "img2"
	if a := computePodActions(pod, st, now, bo, planExtras{}); len(a.StartApp) != 1 || len(a.Waiting) != 0 {
		t.Errorf("new image: StartApp %v waiting %+v, want a restart at once", a.StartApp, a.Waiting)
	}
}
