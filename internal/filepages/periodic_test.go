package filepages

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestPeriodically: the first release comes after first and evicts, the
// next ones every period without evicting; each result is reported, a
// failure included, and the loop returns when its context ends.
func TestPeriodically(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(t.Context())
	calls := make(chan bool)
	reports := make(chan error, 10)
	release := func(evict bool) (uint64, error) {
		calls <- evict
		if !evict {
			return 0, errors.New("boom")
		}
		return 42, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodically(ctx, clk, 10*time.Second, 30*time.Second, release, func(_ uint64, err error) { reports <- err })
	}()
	var evicts []bool
	for _, step := range []time.Duration{10 * time.Second, 30 * time.Second, 30 * time.Second} {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(step - time.Nanosecond)
		select {
		case <-calls:
			t.Fatal("released before its time")
		case <-time.After(10 * time.Millisecond):
		}
		clk.Step(time.Nanosecond)
		evicts = append(evicts, <-calls)
	}
	if want := []bool{true, false, false}; !slices.Equal(evicts, want) {
		t.Errorf("evict per call = %v, want %v", evicts, want)
	}
	if err := <-reports; err != nil {
		t.Errorf("first report = %v, want nil", err)
	}
	if err := <-reports; err == nil {
		t.Error("second report = nil, want the release's error")
	}
	cancel()
	<-done
}
