package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func sidecarPod(inits []string, sidecars map[string]bool, apps ...string) *v1.Pod {
	p := testPod("Never", inits, apps...)
	always := v1.ContainerRestartPolicyAlways
	for i := range p.Spec.InitContainers {
		if sidecars[p.Spec.InitContainers[i].Name] {
			p.Spec.InitContainers[i].RestartPolicy = &always
		}
	}
	return p
}

func TestPlanSidecars(t *testing.T) {
	sc := map[string]bool{"side": true}
	notStarted := planExtras{Started: func(name, _ string) bool { return name != "side" }}
	tests := []struct {
		name         string
		pod          *v1.Pod
		st           *podState
		x            planExtras
		wantInit     int
		wantRestarts []int
		wantApps     []int
		wantTerm     bool
	}{
		{name: "sidecar starts in order", pod: sidecarPod([]string{"side", "i"}, sc, "app"),
			st: state(sandboxReady(0)), wantInit: 0},
		{name: "next init starts once the sidecar runs", pod: sidecarPod([]string{"side", "i"}, sc, "app"),
			st: state(sandboxReady(0), running("side", 0)), wantInit: 1},
		{name: "next init waits for the sidecar's startup probe", pod: sidecarPod([]string{"side", "i"}, sc, "app"),
			st: state(sandboxReady(0), running("side", 0)), x: notStarted, wantInit: -1},
		{name: "sidecar outlives init containers; apps start", pod: sidecarPod([]string{"side", "i"}, sc, "app"),
			st: state(sandboxReady(0), running("side", 0), exited("i", 0, 0, t0)), wantInit: -1, wantApps: []int{0}},
		{name: "exited sidecar restarts under Never without blocking apps", pod: sidecarPod([]string{"side", "i"}, sc, "app"),
			st:       state(sandboxReady(0), exited("side", 0, 1, t0), exited("i", 0, 0, t0), running("app", 0)),
			wantInit: -1, wantRestarts: []int{0}},
		{name: "sidecar exit does not fail a Never pod", pod: sidecarPod([]string{"side"}, sc, "app"),
			st: state(sandboxReady(0), exited("side", 0, 1, t0), running("app", 0)), wantInit: -1, wantRestarts: []int{0}},
		{name: "pod completes when apps complete, sidecar still running", pod: sidecarPod([]string{"side"}, sc, "app"),
			st: state(sandboxReady(0), running("side", 0), exited("app", 0, 0, t0)), wantInit: -1, wantTerm: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := computePodActions(tt.pod, tt.st, t0.Add(time.Minute), newBackoff(), tt.x)
			if a.StartInit != tt.wantInit || !equalInts(a.RestartSidecars, tt.wantRestarts) ||
				!equalInts(a.StartApp, tt.wantApps) || a.Terminal != tt.wantTerm {
				t.Errorf("got init=%d restarts=%v apps=%v term=%v; want init=%d restarts=%v apps=%v term=%v",
					a.StartInit, a.RestartSidecars, a.StartApp, a.Terminal, tt.wantInit, tt.wantRestarts, tt.wantApps, tt.wantTerm)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlanUnhealthy_B10(t *testing.T) {
	grace := int64(5)
	for _, tt := range []struct {
		policy  v1.RestartPolicy
		probe   string
		wantMsg string
	}{
		{"Always", "liveness", "Container a failed liveness probe, will be restarted"},
		{"OnFailure", "startup", "Container a failed startup probe, will be restarted"},
		{"Never", "liveness", "Container a failed liveness probe"},
	} {
		t.Run(string(tt.policy), func(t *testing.T) {
			pod := testPod(tt.policy, nil, "a")
			st := state(sandboxReady(0), running("a", 0))
			x := planExtras{ProbeFailed: map[string]probeFailure{"a-0": {Probe: tt.probe, Grace: &grace}}}
			a := computePodActions(pod, st, t0, newBackoff(), x)
			if len(a.Unhealthy) != 1 || a.Unhealthy[0].Message != tt.wantMsg || *a.Unhealthy[0].Grace != 5 {
				t.Fatalf("Unhealthy = %+v, want one kill with %q and grace 5", a.Unhealthy, tt.wantMsg)
			}
		})
	}
	// A result for an old container ID kills nothing.
	pod := testPod("Always", nil, "a")
	a := computePodActions(pod, state(sandboxReady(0), running("a", 1)), t0, newBackoff(),
		planExtras{ProbeFailed: map[string]probeFailure{"a-0": {Probe: "liveness"}}})
	if len(a.Unhealthy) != 0 {
		t.Errorf("stale probe result killed %+v", a.Unhealthy)
	}
}

func TestPlanDeadlineExceeded_A9(t *testing.T) {
	pod := testPod("Always", nil, "a")
	x := planExtras{Failure: &podFailure{Reason: "DeadlineExceeded"}}
	a := computePodActions(pod, state(sandboxReady(0), running("a", 0)), t0, newBackoff(), x)
	if !a.Terminal || !a.StopSandbox {
		t.Fatalf("got %+v, want terminal with StopSandbox", a)
	}
	s := computePodStatus(statusInput{Pod: pod, State: state(sandboxReady(0), exited("a", 0, 137, t0)), Now: t0,
		Failure: &podFailure{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}})
	if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" {
		t.Errorf("phase=%s reason=%s, want Failed/DeadlineExceeded", s.Phase, s.Reason)
	}
}

func TestStatusProbes_B8(t *testing.T) {
	pod := testPod("Always", nil, "a", "b")
	st := state(sandboxReady(0), running("a", 0), running("b", 0))
	notReady := func(name string) bool { return name != "b" }
	s := computePodStatus(statusInput{Pod: pod, State: st, Now: t0, Ready: notReady})
	if !s.ContainerStatuses[0].Ready || s.ContainerStatuses[1].Ready {
		t.Fatalf("ready = %v/%v, want true/false", s.ContainerStatuses[0].Ready, s.ContainerStatuses[1].Ready)
	}
	if c := findCondition(&s, v1.PodReady); c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [b]" {
		t.Errorf("Ready condition = %+v", c)
	}
	// Startup not passed: started=false and not ready (B.4).
	s = computePodStatus(statusInput{Pod: pod, State: st, Now: t0, Started: notReady})
	if *s.ContainerStatuses[1].Started || s.ContainerStatuses[1].Ready {
		t.Errorf("b started=%v ready=%v, want false/false", *s.ContainerStatuses[1].Started, s.ContainerStatuses[1].Ready)
	}
}

func TestStatusPostStartNotRunning_C3(t *testing.T) {
	pod := testPod("Always", nil, "a")
	s := computePodStatus(statusInput{Pod: pod, State: state(sandboxReady(0), running("a", 0)), Now: t0,
		InPostStart: map[string]bool{"a": true}})
	cs := s.ContainerStatuses[0]
	if cs.State.Running != nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" || cs.Ready {
		t.Errorf("state = %+v ready=%v, want Waiting ContainerCreating, not ready", cs.State, cs.Ready)
	}
}

func TestStatusSidecarReadiness(t *testing.T) {
	pod := sidecarPod([]string{"side"}, map[string]bool{"side": true}, "app")
	st := state(sandboxReady(0), running("side", 0), running("app", 0))
	s := computePodStatus(statusInput{Pod: pod, State: st, Now: t0, Ready: func(n string) bool { return n != "side" }})
	if c := findCondition(&s, v1.ContainersReady); c.Status != v1.ConditionFalse || !strings.Contains(c.Message, "side") {
		t.Errorf("ContainersReady = %+v, want False naming the sidecar", c)
	}
	if c := findCondition(&s, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("Initialized = %+v, want True (sidecar started)", c)
	}
	if s.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running", s.Phase)
	}
}

func TestTerminationMessage_A40(t *testing.T) {
	dir := t.TempDir()
	pod := testPod("Always", nil, "a")
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath = "/dev/termination-log"
	host, err := terminationMessageFile(dir, pod, c)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(host); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("termination file %s: %v %v", host, fi, err)
	}
	logPath := filepath.Join(dir, "0.log")
	if err := os.WriteFile(logPath, []byte("2026-01-01T00:00:00Z stderr F boom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := exited("a", 0, 1, t0)
	cs.LogPath = logPath
	cs.Annotations = map[string]string{annotationTermMessageHost: host}
	if got := terminationMessage(context.Background(), cs); got != "" {
		t.Errorf("empty file, policy File: message %q, want empty", got)
	}
	cs.Annotations[annotationTermMessagePolicy] = string(v1.TerminationMessageFallbackToLogsOnError)
	if got := terminationMessage(context.Background(), cs); got != "boom\n" {
		t.Errorf("A.41 fallback to logs: message %q, want %q", got, "boom\n")
	}
	if err := os.WriteFile(host, []byte(strings.Repeat("x", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := terminationMessage(context.Background(), cs); len(got) != maxTerminationMessage {
		t.Errorf("message length %d, want the last %d bytes", len(got), maxTerminationMessage)
	}
	if got := withMessage(cs, "done").Message; got != "done" {
		t.Errorf("withMessage = %q", got)
	}
}

func TestHookRunner_C1(t *testing.T) {
	var gotPath, gotHeader, gotUA, gotHost string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotHeader, gotUA, gotHost = r.URL.Path, r.Header.Get("X-Test"), r.UserAgent(), r.Host
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	var execCmd []string
	r := newHookRunner(func(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, error) {
		execCmd = cmd
		if cmd[0] == "fail" {
			return []byte("oops"), errors.New("command 'fail' exited with 1: ")
		}
		return nil, nil
	})
	pod := testPod("Always", nil, "a")
	c := &pod.Spec.Containers[0]
	c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
	ctx := context.Background()

	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "hook", Port: intstr.FromString("http"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Test", Value: "yes"}, {Name: "Host", Value: "example.test"}}}}
	if msg, err := r.run(ctx, pod, c, "id", "127.0.0.1", h); err != nil {
		t.Fatalf("http hook: %v (%s)", err, msg)
	}
	if gotPath != "/hook" || gotHeader != "yes" || gotUA != "kube-lifecycle/1.37" || gotHost != "example.test" {
		t.Errorf("http hook hit %q with header %q, User-Agent %q, Host %q", gotPath, gotHeader, gotUA, gotHost)
	}
	h.HTTPGet.Port = intstr.FromString("nope")
	if msg, err := r.run(ctx, pod, c, "id", "127.0.0.1", h); err == nil || !strings.Contains(msg, `port "nope" of container "a": port not found`) {
		t.Errorf("http hook on an unknown port: %v, message %q", err, msg)
	}
	if _, err := r.run(ctx, pod, c, "id", "", &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"ok"}}}); err != nil || execCmd[0] != "ok" {
		t.Errorf("exec hook: %v, ran %v", err, execCmd)
	}
	msg, err := r.run(ctx, pod, c, "id", "", &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"fail"}}})
	want := `Exec lifecycle hook ([fail]) for Container "a" in Pod "web-node_default(uid1)" failed - error: command 'fail' exited with 1: , message: "oops"`
	if err == nil || msg != want {
		t.Errorf("failing exec hook: msg %q\nwant %q", msg, want)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.run(cctx, pod, c, "id", "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 60}}); err == nil {
		t.Error("C.14 sleep hook: no error when cancelled")
	}
	if _, err := r.run(ctx, pod, c, "id", "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}); err != nil {
		t.Errorf("sleep 0: %v", err)
	}
}
