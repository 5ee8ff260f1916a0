package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/startgate"
)

// waitQueued blocks until the gate has n waiters of priority p.
func waitQueued(t *testing.T, g *startgate.Gate, p startgate.Priority, n int) {
	t.Helper()
	for range 5000 {
		if g.Waiting(p) == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never %d waiters of priority %d", n, p)
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestAgentStartsThroughTheGivenGate: the agent starts sandboxes through
// the start gate it is given (the one the prober watches), so a start waits
// while the gate is full.
func TestAgentStartsThroughTheGivenGate(t *testing.T) {
	rt := newFakeRuntime()
	cfg := testConfig(t, rt)
	cfg.Starts = startgate.New(1)
	release, err := cfg.Starts.Acquire(context.Background(), startgate.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	h := runTestAgent(t, cfg)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
	waitQueued(t, cfg.Starts, startgate.Sandbox, 1) // the sandbox creation waits at the gate
	for _, c := range rt.Calls() {
		if strings.HasPrefix(c, "RunSandbox") {
			t.Fatalf("sandbox started while the given gate was full: %v", rt.Calls())
		}
	}
	if isClosed(cfg.Starts.Idle()) {
		t.Error("gate idle while the agent waits for it")
	}
	release()
	h.eventually("sandbox started after the gate freed", func() bool {
		_, ok := rt.ContainerByName("uid1", "a")
		return ok
	})
}
