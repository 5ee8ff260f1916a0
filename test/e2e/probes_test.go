package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// fastProbe renders a probe field of kind ("readinessProbe", ...) with
// handler (flow-style YAML) probing every second. The first probe waits a
// second: a probe may otherwise run before the test server listens (or
// before it handles SIGTERM), which would make "passing" probes fail.
func fastProbe(kind, handler string, failureThreshold int) string {
	return fmt.Sprintf("%s: {%s, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: %d}", kind, handler, failureThreshold)
}

// Probe handlers used by several tests (flow-style YAML).
const (
	execOK      = `exec: {command: ["sh", "-c", "exit 0"]}`
	execBad     = `exec: {command: ["sh", "-c", "echo unhealthy; exit 1"]}`
	grpcUnknown = `service: nope`
)

func TestReadinessProbeHandlers_B2_B3_B4_B5_B6_B10(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	ready := func(h string) string { return fastProbe("readinessProbe", h, 1) }
	e.WriteManifest(t, "readiness.yaml", podSpec("readiness", []string{"terminationGracePeriodSeconds: 5"}, nil, []string{
		testserver("exec-ok", 0, 0, 0, nil, ready(execOK)),
		testserver("exec-bad", 0, 0, 0, nil, ready(execBad)),
		testserver("http-ok", 8080, 0, 0, nil, ready(`httpGet: {path: /healthz, port: 8080}`)),
		testserver("http-bad", 8090, 0, 0, nil, ready(`httpGet: {path: /status/503, port: 8090}`)),
		testserver("tcp-ok", 0, 8081, 0, nil, ready(`tcpSocket: {port: 8081}`)),
		testserver("tcp-bad", 0, 0, 0, nil, ready(`tcpSocket: {port: 8091}`)),
		testserver("grpc-ok", 0, 0, 8082, nil, ready(`grpc: {port: 8082}`)),
		testserver("grpc-bad", 0, 0, 8092, nil, ready(`grpc: {port: 8092, `+grpcUnknown+`}`)),
	}))
	name := PodName("readiness")
	good := []string{"exec-ok", "http-ok", "tcp-ok", "grpc-ok"}
	p := e.WaitForPod(t, name, func(p *v1.Pod) bool {
		for _, c := range good {
			if st := containerStatus(p, c); st == nil || !st.Ready {
				return false
			}
		}
		return p.Status.Phase == v1.PodRunning
	}, podStartTimeout)

	ip := p.Status.PodIP
	for c, msg := range map[string]string{
		"exec-bad": "Readiness probe failed: unhealthy",
		"http-bad": "Readiness probe failed: HTTP probe failed with statuscode: 503",
		"tcp-bad":  fmt.Sprintf("Readiness probe failed: dial tcp %s:8091: connect: connection refused", ip),
		"grpc-bad": "Readiness probe failed: error: health rpc probe failed: rpc error: code = NotFound desc = unknown service",
	} {
		ev := e.WaitForEvent(t, p, ctr(c), "Unhealthy", msg, lifecycleTimeout)
		if ev.Type != v1.EventTypeWarning {
			t.Errorf("%s: Unhealthy event type %s, want Warning", c, ev.Type)
		}
	}
	// The failing probes ran several times by now; sample the status again.
	time.Sleep(2 * time.Second)
	p = e.WaitForPod(t, name, phaseIs(v1.PodRunning), podStartTimeout)
	for _, st := range p.Status.ContainerStatuses {
		wantReady := !strings.HasSuffix(st.Name, "-bad")
		if st.Ready != wantReady || st.State.Running == nil || st.Started == nil || !*st.Started || st.RestartCount != 0 {
			t.Errorf("%s: ready %t running %t started %v restarts %d; want ready %t, running, started, no restart",
				st.Name, st.Ready, st.State.Running != nil, st.Started, st.RestartCount, wantReady)
		}
	}
	const unready = "containers with unready status: [exec-bad http-bad tcp-bad grpc-bad]"
	for _, typ := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
		c := findPodCondition(p, typ)
		if c == nil || c.Status != v1.ConditionFalse || c.Reason != "ContainersNotReady" || c.Message != unready {
			t.Errorf("condition %s = %s, want False ContainersNotReady %q", typ, dump(c), unready)
		}
	}
}

func TestReadinessTogglesBothWays_B10_B19(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	ready := func(h string) string { return fastProbe("readinessProbe", h, 1) }
	e.WriteManifest(t, "toggle.yaml", podSpec("toggle", []string{"terminationGracePeriodSeconds: 5"}, nil, []string{
		testserver("web", 8080, 0, 0, nil, ready(`httpGet: {path: /ready, port: 8080}`)),
		testserver("rpc", 8083, 0, 8082, nil, ready(`grpc: {port: 8082}`)),
	}))
	name := PodName("toggle")
	p := e.WaitForPod(t, name, runningAndReady, podStartTimeout)
	ip := p.Status.PodIP

	steps := []struct {
		port        int
		post        string
		unready     string // container expected unready after the POST, "" none
		eventReason string
		eventMsg    string
	}{
		{8080, "/ready?state=false", "web", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"},
		{8080, "/ready?state=true", "", "", ""},
		{8083, "/grpc-health?status=NOT_SERVING", "rpc", "Unhealthy", `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`},
		{8083, "/grpc-health?status=SERVING", "", "", ""},
	}
	for _, s := range steps {
		start := time.Now()
		postPod(t, ip, s.port, s.post)
		p = e.WaitForPod(t, name, func(p *v1.Pod) bool {
			for _, st := range p.Status.ContainerStatuses {
				if st.Ready != (st.Name != s.unready) {
					return false
				}
			}
			return true
		}, 30*time.Second)
		t.Logf("POST %s: readiness changed after %s", s.post, time.Since(start).Round(time.Millisecond))
		wantPod := v1.ConditionTrue
		if s.unready != "" {
			wantPod = v1.ConditionFalse
		}
		for _, typ := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			if got := conditionStatus(p, typ); got != wantPod {
				t.Errorf("after POST %s: condition %s = %s, want %s", s.post, typ, got, wantPod)
			}
		}
		if s.eventMsg != "" {
			e.WaitForEvent(t, p, ctr(s.unready), s.eventReason, s.eventMsg, 10*time.Second)
		}
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.RestartCount != 0 || st.State.Running == nil {
			t.Errorf("%s: restartCount %d running %t; readiness failures must not restart", st.Name, st.RestartCount, st.State.Running != nil)
		}
	}
}

func TestLivenessProbeHandlers_B9_B17_B18(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	// Every container gets a startup probe on its HTTP port: liveness only
	// starts once the test server is up (and handles SIGTERM), however slowly
	// it starts beside the other pods.
	live := func(h string, httpPort int) []string {
		return []string{fastProbe("livenessProbe", h, 1),
			fmt.Sprintf("startupProbe: {httpGet: {path: /healthz, port: %d}, periodSeconds: 1, failureThreshold: 60}", httpPort)}
	}
	grace := []string{"terminationGracePeriodSeconds: 5"}
	failing := map[string]struct {
		container string
		msg       []string // parts of the Unhealthy message
	}{
		"liveness-exec": {testserver("app", 8080, 0, 0, nil, live(execBad, 8080)...),
			[]string{"Liveness probe failed: unhealthy"}},
		"liveness-http": {testserver("app", 8080, 0, 0, nil, live(`httpGet: {path: /status/500, port: 8080}`, 8080)...),
			[]string{"Liveness probe failed: HTTP probe failed with statuscode: 500"}},
		"liveness-tcp": {testserver("app", 8080, 0, 0, nil, live(`tcpSocket: {port: 8081}`, 8080)...),
			[]string{"Liveness probe failed: dial tcp ", ":8081: connect: connection refused"}},
		"liveness-grpc": {testserver("app", 8080, 0, 8082, nil, live(`grpc: {port: 8082, `+grpcUnknown+`}`, 8080)...),
			[]string{"Liveness probe failed: error: health rpc probe failed: ", "NotFound"}},
	}
	for pod, f := range failing {
		e.WriteManifest(t, pod+".yaml", podSpec(pod, grace, nil, []string{f.container}))
	}
	// Under OnFailure the kubelet restarts a container it killed for its
	// liveness probe even though it then exits 0 (it starts it in the same
	// sync); under Never it is only killed.
	for _, policy := range []string{"OnFailure", "Never"} {
		pod := "liveness-" + strings.ToLower(policy)
		e.WriteManifest(t, pod+".yaml", podSpec(pod, append([]string{"restartPolicy: " + policy}, grace...), nil, []string{
			testserver("app", 8080, 0, 0, nil, live(`httpGet: {path: /status/500, port: 8080}`, 8080)...)}))
	}
	e.WriteManifest(t, "liveness-ok.yaml", podSpec("liveness-ok", grace, nil, []string{
		testserver("exec", 8080, 0, 0, nil, live(execOK, 8080)...),
		testserver("http", 8084, 0, 0, nil, live(`httpGet: {path: /healthz, port: 8084}`, 8084)...),
		testserver("tcp", 8085, 8081, 0, nil, live(`tcpSocket: {port: 8081}`, 8085)...),
		testserver("grpc", 8086, 0, 8082, nil, live(`grpc: {port: 8082}`, 8086)...),
	}))

	for pod, f := range failing {
		p := e.WaitForPod(t, PodName(pod), containerCond("app", restartCountAtLeast(1)), lifecycleTimeout)
		st := statusOf(t, p, "app")
		// As in the kubelet, the second liveness kill restarts at once too (the
		// back-off is measured from the exit before the kill, and the first
		// one set none); the third waits 10s. So the count is 1 or 2.
		if st.RestartCount < 1 || st.RestartCount > 2 {
			t.Errorf("%s: restartCount %d, want 1 or 2", pod, st.RestartCount)
		}
		// The test server exits 0 on SIGTERM: the kill was graceful.
		if term := st.LastTerminationState.Terminated; term == nil || term.ExitCode != 0 {
			t.Errorf("%s: lastState %s, want terminated with exit 0 (SIGTERM)", pod, dump(st.LastTerminationState))
		}
		events := e.Events(t, p)
		if !hasEventWith(events, ctr("app"), "Unhealthy", f.msg...) {
			t.Errorf("%s: no Unhealthy event with %q; events:\n%s", pod, f.msg, eventSummary(events))
		}
		if findEvent(events, ctr("app"), "Killing", "Container app failed liveness probe, will be restarted") == nil {
			t.Errorf("%s: no Killing event for the liveness failure; events:\n%s", pod, eventSummary(events))
		}
	}

	p := e.WaitForPod(t, PodName("liveness-onfailure"), containerCond("app", restartCountAtLeast(1)), lifecycleTimeout)
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("liveness-onfailure: phase %s after the liveness restart, want Running", p.Status.Phase)
	}
	e.WaitForEvent(t, p, ctr("app"), "Killing", "Container app failed liveness probe, will be restarted", 10*time.Second)

	p = e.WaitForPod(t, PodName("liveness-never"), phaseIs(v1.PodSucceeded), lifecycleTimeout)
	if st := statusOf(t, p, "app"); st.RestartCount != 0 || st.State.Terminated == nil {
		t.Errorf("liveness-never: %s, want terminated without restart", dump(st))
	}
	if ev := e.WaitForEvent(t, p, ctr("app"), "Killing", "Container app failed liveness probe", 10*time.Second); ev.Message != "Container app failed liveness probe" {
		t.Errorf("liveness-never: Killing message %q, want no restart promise under restartPolicy Never", ev.Message)
	}

	// Ready, not only Running: the containers' startup probes pass first
	// (a slower runtime is Running well before that).
	p = e.WaitForPod(t, PodName("liveness-ok"), func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && podReady(p) }, podStartTimeout)
	for _, st := range p.Status.ContainerStatuses {
		if st.RestartCount != 0 || st.State.Running == nil || !st.Ready {
			t.Errorf("liveness-ok/%s: restartCount %d running %t ready %t; a passing liveness probe must leave it alone",
				st.Name, st.RestartCount, st.State.Running != nil, st.Ready)
		}
	}
	if events := e.Events(t, p); findEvent(events, "", "Unhealthy", "Liveness probe") != nil || findEvent(events, "", "Killing", "") != nil {
		t.Errorf("liveness-ok has probe failure events:\n%s", eventSummary(events))
	}
}

func TestStartupProbeGatesLiveness_B11(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	grace := []string{"terminationGracePeriodSeconds: 5"}
	startupReady := fastProbe("startupProbe", `httpGet: {path: /ready, port: 8080}`, 30)
	// gated: liveness fails from the start, but the startup probe holds it
	// off until the server turns ready after 5s.
	e.WriteManifest(t, "gated.yaml", podSpec("gated", grace, nil, []string{
		testserver("app", 8080, 0, 0, []string{"--ready-after=5s"}, startupReady,
			fastProbe("livenessProbe", `httpGet: {path: /status/500, port: 8080}`, 1)),
	}))
	// slow-start: started turns true once the startup probe passes.
	e.WriteManifest(t, "slow-start.yaml", podSpec("slow-start", grace, nil, []string{
		testserver("app", 8080, 0, 0, []string{"--ready-after=3s"}, startupReady),
	}))
	// never-starts: a failing startup probe kills the container.
	e.WriteManifest(t, "never-starts.yaml", podSpec("never-starts", grace, nil, []string{
		testserver("app", 8080, 0, 0, nil, fastProbe("startupProbe", `httpGet: {path: /status/500, port: 8080}`, 2)),
	}))

	gated := newContainerTracker(e, PodName("gated"), "app")
	sawUnstarted := false
	gated.until(t, lifecycleTimeout, "gated: first container not killed", func() bool {
		if p, err := e.findPod(PodName("slow-start")); err == nil && p != nil {
			if st := containerStatus(p, "app"); st != nil && st.State.Running != nil && st.Started != nil && !*st.Started {
				sawUnstarted = true
				if st.Ready {
					t.Errorf("slow-start: ready before its startup probe passed")
				}
			}
		}
		r := gated.attempts[0]
		return r != nil && r.Exited
	})
	r := gated.attempts[0]
	lived := r.Finished.Sub(r.StartedAt)
	t.Logf("gated: the first container lived %s with liveness failing from the start", lived)
	if lived < 4*time.Second {
		t.Errorf("gated: killed %s after start; the startup probe (ready after 5s) must hold liveness off", lived)
	}
	p := e.WaitForPod(t, PodName("gated"), containerCond("app", restartCountAtLeast(1)), lifecycleTimeout)
	e.WaitForEvent(t, p, ctr("app"), "Killing", "Container app failed liveness probe, will be restarted", 10*time.Second)
	if ev := findEvent(e.Events(t, p), ctr("app"), "Unhealthy", "Startup probe failed"); ev == nil {
		t.Errorf("gated: no Unhealthy event for the startup probe failing while the server was not ready")
	}

	if !sawUnstarted {
		t.Errorf("slow-start: never saw the running container with started=false before its startup probe passed")
	}
	p = e.WaitForPod(t, PodName("slow-start"), containerCond("app", func(st *v1.ContainerStatus) bool {
		return st.Started != nil && *st.Started && st.Ready
	}), lifecycleTimeout)
	if st := statusOf(t, p, "app"); st.RestartCount != 0 {
		t.Errorf("slow-start: restartCount %d, want 0", st.RestartCount)
	}

	p = e.WaitForPod(t, PodName("never-starts"), containerCond("app", restartCountAtLeast(1)), lifecycleTimeout)
	e.WaitForEvent(t, p, ctr("app"), "Unhealthy", "Startup probe failed: HTTP probe failed with statuscode: 500", 10*time.Second)
	e.WaitForEvent(t, p, ctr("app"), "Killing", "Container app failed startup probe, will be restarted", 10*time.Second)
}

// hasEventWith reports whether an event with reason at fieldPath has a
// message containing every part.
func hasEventWith(events []v1.Event, fieldPath, reason string, parts ...string) bool {
	for _, ev := range events {
		if ev.Reason != reason || ev.InvolvedObject.FieldPath != fieldPath {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(ev.Message, p)
		}
		if all {
			return true
		}
	}
	return false
}

func findPodCondition(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
