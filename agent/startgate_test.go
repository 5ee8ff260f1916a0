package agent

import (
	"context"
	"testing"
	"time"
)

// waitQueued blocks until the gate has n waiters of priority p.
func waitQueued(t *testing.T, g *startGate, p startPriority, n int) {
	t.Helper()
	for range 5000 {
		g.mu.Lock()
		got := len(g.waiters[p])
		g.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never %d waiters of priority %d", n, p)
}

// TestStartGateServesContainersBeforeSandboxes: with the slot taken, a
// container start queued after a sandbox creation still goes first, so a
// pod already started runs before the next pod's sandbox (issue 5 density).
func TestStartGateServesContainersBeforeSandboxes(t *testing.T) {
	ctx := context.Background()
	g := newStartGate(1)
	release, err := g.acquire(ctx, prioSandbox)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 3)
	done := make(chan struct{}, 3)
	take := func(name string, p startPriority) {
		r, err := g.acquire(ctx, p)
		if err != nil {
			t.Error(err)
			return
		}
		order <- name
		r()
		done <- struct{}{}
	}
	go take("sandbox-2", prioSandbox)
	waitQueued(t, g, prioSandbox, 1)
	go take("sandbox-3", prioSandbox)
	waitQueued(t, g, prioSandbox, 2)
	go take("container-1", prioContainer)
	waitQueued(t, g, prioContainer, 1)
	release()
	for range 3 {
		<-done
	}
	close(order)
	var got []string
	for n := range order {
		got = append(got, n)
	}
	want := []string{"container-1", "sandbox-2", "sandbox-3"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("served %v, want %v", got, want)
	}
	if g.free != 1 {
		t.Errorf("free slots %d after all released, want 1", g.free)
	}
}

// TestStartGateCancelledWaiterGivesNoSlotAway: a waiter whose context ends
// leaves the queue and the slot count stays right.
func TestStartGateCancelledWaiterGivesNoSlotAway(t *testing.T) {
	g := newStartGate(1)
	release, _ := g.acquire(context.Background(), prioContainer)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := g.acquire(ctx, prioSandbox)
		errc <- err
	}()
	waitQueued(t, g, prioSandbox, 1)
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("acquire with a cancelled context succeeded")
	}
	release()
	if g.free != 1 || g.anyWaiterLocked() {
		t.Errorf("free %d, waiters %v: want 1 free slot and no waiters", g.free, g.waiters)
	}
	r, err := g.acquire(context.Background(), prioSandbox)
	if err != nil {
		t.Fatal(err)
	}
	r()
}
