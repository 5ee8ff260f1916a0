package startgate

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// waitQueued blocks until the gate has n waiters of priority p.
func waitQueued(t *testing.T, g *Gate, p Priority, n int) {
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
// pod already started runs before the next pod's sandbox (issue 5 density);
// an adaptive gate keeps the order (issue 13).
func TestStartGateServesContainersBeforeSandboxes(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	for name, g := range map[string]*Gate{
		"fixed":    New(1),
		"adaptive": newAdaptiveGate(clk, 1, 32),
	} {
		t.Run(name, func(t *testing.T) { testServesContainersFirst(t, g) })
	}
}

func testServesContainersFirst(t *testing.T, g *Gate) {
	ctx := context.Background()
	release, err := g.Acquire(ctx, Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 3)
	done := make(chan struct{}, 3)
	take := func(name string, p Priority) {
		r, err := g.Acquire(ctx, p)
		if err != nil {
			t.Error(err)
			return
		}
		order <- name
		r()
		done <- struct{}{}
	}
	go take("sandbox-2", Sandbox)
	waitQueued(t, g, Sandbox, 1)
	go take("sandbox-3", Sandbox)
	waitQueued(t, g, Sandbox, 2)
	go take("container-1", Container)
	waitQueued(t, g, Container, 1)
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
	if g.inFlight != 0 {
		t.Errorf("%d in flight after all released, want 0", g.inFlight)
	}
}

// cancelQueuedWaiter queues a sandbox waiter on g (whose slots are taken),
// cancels it and checks that it got no slot.
func cancelQueuedWaiter(t *testing.T, g *Gate) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := g.Acquire(ctx, Sandbox)
		errc <- err
	}()
	waitQueued(t, g, Sandbox, 1)
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("acquire with a cancelled context succeeded")
	}
}

// TestStartGateCancelledWaiterGivesNoSlotAway: a waiter whose context ends
// leaves the queue and the slot count stays right.
func TestStartGateCancelledWaiterGivesNoSlotAway(t *testing.T) {
	g := New(1)
	release, _ := g.Acquire(context.Background(), Container)
	cancelQueuedWaiter(t, g)
	release()
	if g.inFlight != 0 || g.anyWaiterLocked() {
		t.Errorf("%d in flight, waiters %v: want none", g.inFlight, g.waiters)
	}
	r, err := g.Acquire(context.Background(), Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	r()
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

// TestStartGateIdle: the idle channel is closed exactly while no start is
// in flight or waiting, and a busy period's channel is closed when it ends
// (repeated exec probes wait on it, issue 5 density).
func TestStartGateIdle(t *testing.T) {
	ctx := context.Background()
	g := New(1)
	if !isClosed(g.Idle()) {
		t.Fatal("a new gate is not idle")
	}
	r1, _ := g.Acquire(ctx, Sandbox)
	busy := g.Idle()
	if isClosed(busy) {
		t.Fatal("idle while a start is in flight")
	}
	got := make(chan func(), 1)
	go func() {
		r, err := g.Acquire(ctx, Container)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	waitQueued(t, g, Container, 1)
	r1() // hands the slot to the waiter: still busy
	r2 := <-got
	if isClosed(busy) || isClosed(g.Idle()) {
		t.Fatal("idle while the second start is in flight")
	}
	r2()
	if !isClosed(busy) || !isClosed(g.Idle()) {
		t.Fatal("not idle after every start was released")
	}
	// A waiter that gives up does not keep the gate busy.
	r3, _ := g.Acquire(ctx, Sandbox)
	cancelQueuedWaiter(t, g)
	if isClosed(g.Idle()) {
		t.Fatal("idle while a start is in flight")
	}
	r3()
	if !isClosed(g.Idle()) {
		t.Fatal("not idle after the cancelled waiter left and the start was released")
	}
}
