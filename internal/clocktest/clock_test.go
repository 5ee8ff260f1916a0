package clocktest

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNextDue(t *testing.T) {
	tests := []struct {
		name string
		// do hands out waits on c and steps it; want is NextIn after.
		do   func(c *Clock)
		want time.Duration // 0: nothing pending
	}{
		{"none", func(*Clock) {}, 0},
		{"timer", func(c *Clock) { c.NewTimer(5 * time.Second) }, 5 * time.Second},
		{"timer stepped short of it", func(c *Clock) { c.NewTimer(5 * time.Second); c.Step(4 * time.Second) }, time.Second},
		{"timer fired", func(c *Clock) { c.NewTimer(5 * time.Second); c.Step(5 * time.Second) }, 0},
		{"timer stopped", func(c *Clock) { c.NewTimer(5 * time.Second).Stop() }, 0},
		{"timer reset", func(c *Clock) { c.NewTimer(5 * time.Second).Reset(9 * time.Second) }, 9 * time.Second},
		{"earliest of two", func(c *Clock) { c.NewTimer(5 * time.Second); c.After(3 * time.Second) }, 3 * time.Second},
		{"AfterFunc", func(c *Clock) { c.AfterFunc(2*time.Second, func() {}) }, 2 * time.Second},
		{"AfterFunc ran", func(c *Clock) { c.AfterFunc(2*time.Second, func() {}); c.Step(2 * time.Second) }, 0},
		{"ticker", func(c *Clock) { c.NewTicker(time.Minute) }, time.Minute},
		{"ticker after two ticks", func(c *Clock) { c.NewTicker(time.Minute); c.Step(150 * time.Second) }, 30 * time.Second},
		{"ticker stopped", func(c *Clock) { c.NewTicker(time.Minute).Stop() }, 0},
		{"Tick", func(c *Clock) { c.Tick(time.Minute); c.Step(time.Minute) }, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(t0)
			tt.do(c)
			got, ok := c.NextIn()
			if ok != (tt.want != 0) || got != tt.want {
				t.Errorf("NextIn() = %v, %t; want %v", got, ok, tt.want)
			}
		})
	}
}

// The waits fire as a FakeClock's do: at their due time, not before.
func TestWaitsFireWhenDue(t *testing.T) {
	c := New(t0)
	var _ clock.WithTicker = c
	var _ clock.WithDelayedExecution = c
	tm := c.NewTimer(5 * time.Second)
	c.Step(4 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	c.Step(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("timer did not fire when due")
	}
}
