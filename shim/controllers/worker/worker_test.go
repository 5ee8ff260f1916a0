package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestProcessNext(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		wantRequeues int  // rate-limited retries recorded
		wantLater    bool // back after the Requeue's delay
	}{
		{"done", nil, 0, false},
		{"failed: back-off", errors.New("boom"), 1, false},
		{"requeue: no back-off", &Requeue{After: time.Minute, Reason: "waiting"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			q := workqueue.NewTypedRateLimitingQueueWithConfig(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
				workqueue.TypedRateLimitingQueueConfig[string]{Clock: clk})
			defer q.ShutDown()
			q.Add("k")
			calls := 0
			if !processNext(context.Background(), q, func(_ context.Context, key string) error {
				calls++
				return tt.err
			}) || calls != 1 {
				t.Fatalf("processNext: %d calls", calls)
			}
			if got := q.NumRequeues("k"); got != tt.wantRequeues {
				t.Errorf("requeues %d, want %d", got, tt.wantRequeues)
			}
			if q.Len() != 0 {
				t.Fatalf("requeued at once")
			}
			if tt.wantLater && !stepUntilQueued(clk, q, time.Minute) {
				t.Fatal("not requeued after the delay")
			}
		})
	}
}

// stepUntilQueued steps clk until q holds a key; the queue's delaying
// goroutine reads the clock on its own schedule.
func stepUntilQueued(clk *clocktesting.FakeClock, q workqueue.TypedRateLimitingInterface[string], step time.Duration) bool {
	for range 1000 {
		clk.Step(step)
		if q.Len() == 1 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// TestRunStops: Run returns once ctx ends, its workers stopped and the
// queue shut down.
func TestRunStops(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	ctx, cancel := context.WithCancel(context.Background())
	q.Add("k")
	synced := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, q, 2, func(context.Context, string) error { close(synced); return nil })
	}()
	<-synced
	cancel()
	<-done
	if !q.ShuttingDown() {
		t.Fatal("queue not shut down")
	}
}
