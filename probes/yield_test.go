package probes

import (
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestYields(t *testing.T) {
	exec := execProbe("x", 0, 10, 1, 3)
	http := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/"}}}
	tests := []struct {
		name    string
		spec    *v1.Probe
		kind    Kind
		verdict Result
		want    bool
	}{
		{"exec liveness of a live container", exec, Liveness, Success, true},
		{"exec readiness of a ready container", exec, Readiness, Success, true},
		{"exec readiness of a container not ready", exec, Readiness, Failure, false},
		{"exec startup probe", exec, Startup, Success, false},
		{"exec startup probe not yet succeeded", exec, Startup, Unknown, false},
		{"http liveness (cheap, never yields)", http, Liveness, Success, false},
		{"http readiness of a ready container", http, Readiness, Success, false},
	}
	for _, tc := range tests {
		if got := yields(tc.spec, tc.kind, tc.verdict); got != tc.want {
			t.Errorf("%s: yields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// startsSignal is a fake Config.StartsIdle the test switches.
type startsSignal struct {
	mu   sync.Mutex
	idle chan struct{}
}

func newStartsSignal() *startsSignal {
	s := &startsSignal{idle: make(chan struct{})}
	close(s.idle)
	return s
}

func (s *startsSignal) get() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle
}

func (s *startsSignal) busy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = make(chan struct{})
}

func (s *startsSignal) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.idle)
}

// TestWorker_YieldsToStarts: while the node starts containers, the exec
// liveness check waits at most one period and the readiness re-check of a
// ready container at most six; both run as soon as the starts are done, and
// first rounds never wait (issue 5, density).
func TestWorker_YieldsToStarts(t *testing.T) {
	const period = 10 * time.Second
	starts := newStartsSignal()
	h := newHarness(t, harnessOpts{startsIdle: starts.get})
	h.exec.set("ready", pass)
	h.exec.set("live", pass)
	starts.busy()
	h.add(appPod("p1", nil, execProbe("ready", 0, 10, 1, 3), execProbe("live", 0, 10, 1, 3)), "c1")
	h.round(Readiness, Liveness) // first rounds run at once, busy or not
	if !h.m.Ready("p1", "app") {
		t.Fatal("not ready after a passing first round")
	}
	for i := 1; i <= 6; i++ {
		if i%2 == 1 { // a tick while busy: both wait
			h.clock.Step(period)
			h.noRound(Liveness)
		} else { // liveness is one period late: it runs anyway
			h.tick(period, Liveness)
		}
		h.noRound(Readiness)
	}
	h.tick(period, Readiness) // readiness is six periods late
	starts.done()
	h.round(Liveness) // waiting since the last tick: runs once starts are over
	if r, l := h.exec.count("ready"), h.exec.count("live"); r != 2 || l != 5 {
		t.Errorf("probes run: readiness %d, liveness %d; want 2 and 5", r, l)
	}
}

// TestWorker_NotReadyDoesNotYield: a readiness probe that could make its
// container ready keeps its period while the node starts containers.
func TestWorker_NotReadyDoesNotYield(t *testing.T) {
	starts := newStartsSignal()
	h := newHarness(t, harnessOpts{startsIdle: starts.get})
	h.exec.set("ready", fail)
	starts.busy()
	h.add(appPod("p1", nil, execProbe("ready", 0, 10, 1, 3), nil), "c1")
	h.round(Readiness)
	h.tick(10*time.Second, Readiness)
	h.exec.set("ready", pass)
	h.tick(10*time.Second, Readiness)
	if !h.m.Ready("p1", "app") {
		t.Fatal("not ready after a passing round")
	}
	h.clock.Step(10 * time.Second) // now ready: the re-check waits
	h.noRound(Readiness)
}
