package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForEach(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var inFlight, most atomic.Int32
	err := forEach(context.Background(), 50, func(_ context.Context, i int) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if seen[i] != 1 {
			t.Errorf("index %d called %d times, want once", i, seen[i])
		}
	}
	if most.Load() > apiCreateWorkers {
		t.Errorf("%d calls in flight, want at most %d", most.Load(), apiCreateWorkers)
	}

	boom := errors.New("boom")
	var calls atomic.Int32
	err = forEach(context.Background(), 1000, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		<-ctx.Done() // the others wait for the first error's cancellation
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the first error", err)
	}
	if calls.Load() >= 1000 {
		t.Errorf("%d calls after an error, want the rest skipped", calls.Load())
	}
}
