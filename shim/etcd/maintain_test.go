package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestNeedsDefrag(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		size, inUse int64
		want        bool
	}{
		{"empty", 0, 0, false},
		{"fresh, all in use", 2 * mib, 2 * mib, false},
		{"after a burst, compacted", 43 * mib, 3 * mib, true},
		{"exactly half in use", 32 * mib, 16 * mib, true},
		{"just over half in use", 32 * mib, 16*mib + 4096, false},
		{"steady churn: a little over half in use", 9 * mib, 5 * mib, false},
		{"mostly free but small", 10 * mib, 3 * mib, false},
		{"frees exactly the minimum", 16 * mib, 8 * mib, true},
		{"frees just under the minimum", 16*mib - 8192, 8*mib - 4096, false},
		{"large, 60% in use", 100 * mib, 60 * mib, false},
		{"inconsistent reading: more in use than the size", 10 * mib, 11 * mib, false},
		{"inconsistent reading: negative", 40 * mib, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsDefrag(tc.size, tc.inUse); got != tc.want {
				t.Errorf("needsDefrag(%d, %d) = %v, want %v", tc.size, tc.inUse, got, tc.want)
			}
		})
	}
}

// TestRunEvery: one step per tick, none before the first, none once the
// context has ended, and runEvery returns then.
func TestRunEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ticks := make(chan time.Time) // unbuffered: a send returns once runEvery has it
	steps := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runEvery(ctx, ticks, func() { steps <- struct{}{} })
	}()
	if len(steps) != 0 {
		t.Fatal("a step before the first tick")
	}
	for i := range 3 {
		ticks <- time.Time{}
		<-steps
		if len(steps) != 0 {
			t.Fatalf("tick %d: more than one step", i)
		}
	}
	cancel()
	<-done
	if len(steps) != 0 {
		t.Error("a step after the context ended")
	}
}

// TestMaintenanceLoop: Start's loop defragments a mostly free backend at
// its interval (a fake clock), and Close waits for it.
func TestMaintenanceLoop(t *testing.T) {
	ctx := context.Background()
	fc := clocktesting.NewFakeClock(time.Now())
	s, err := Start(ctx, Options{Dir: t.TempDir(), DefragInterval: time.Hour, clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := newChurnWriter(s)
	defer w.close()
	w.put(ctx, t, 6000)
	w.compact(ctx, t, w.rev(ctx, t))
	b := s.e.Server.Backend()
	b.ForceCommit()
	before := b.Size()
	if !needsDefrag(before, b.SizeInUse()) {
		t.Fatalf("backend not fragmented enough for the test: size %d, in use %d", before, b.SizeInUse())
	}
	fc.Step(time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for b.Size() >= before/2 {
		if time.Now().After(deadline) {
			t.Fatalf("not defragmented 10 s after the interval: size %d", b.Size())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("defragmented by the loop: %s -> %s", mb(before), mb(b.Size()))
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
