package node

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/nodestatus"
	"github.com/skiffnode/skiff/nodeshutdown"
)

func TestShutdownByPriorityFlag_H20(t *testing.T) {
	o := ShutdownConfig{ByPriority: "100000=10, 10000=180,1000=120,0=60"}
	if err := o.resolve(); err != nil {
		t.Fatal(err)
	}
	want := []nodeshutdown.PriorityGracePeriod{
		{Priority: 100000, ShutdownGracePeriodSeconds: 10}, {Priority: 10000, ShutdownGracePeriodSeconds: 180},
		{Priority: 1000, ShutdownGracePeriodSeconds: 120}, {Priority: 0, ShutdownGracePeriodSeconds: 60},
	}
	if !reflect.DeepEqual(o.Config.ByPodPriority, want) {
		t.Errorf("ByPodPriority = %v, want %v", o.Config.ByPodPriority, want)
	}
	if o.Config.Total() != 370*time.Second {
		t.Errorf("Total = %v", o.Config.Total())
	}
}

// While the node shuts down it reports NotReady with the kubelet's
// "node is shutting down" (H.17).
func TestNodeNotReadyWhileShuttingDown_H17(t *testing.T) {
	l := &oneShutdown{events: make(chan bool, 1)}
	m := nodeshutdown.New(nodeshutdown.Options{
		Config:  nodeshutdown.Config{GracePeriod: 30 * time.Second},
		Connect: func(context.Context) (nodeshutdown.Logind, error) { return l, nil },
	})
	facts := withShutdownStatus(func(context.Context) (nodestatus.Facts, nodestatus.Health) {
		return nodestatus.Facts{}, nodestatus.Health{}
	}, m)
	if _, h := facts(t.Context()); len(h.NotReady) != 0 {
		t.Fatalf("NotReady %v before any shutdown", h.NotReady)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- m.Run(ctx, noPods{}) }()
	l.events <- true
	deadline := time.Now().Add(5 * time.Second)
	for !m.ShuttingDown() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	_, h := facts(t.Context())
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(h.NotReady) != 1 || !errors.Is(h.NotReady[0], nodeshutdown.ErrShuttingDown) || h.NotReady[0].Error() != "node is shutting down" {
		t.Fatalf("NotReady %v, want [node is shutting down]", h.NotReady)
	}
}

// oneShutdown is a logind that waits long enough and sends the test's
// signals.
type oneShutdown struct{ events chan bool }

func (l *oneShutdown) InhibitDelayMax(context.Context) (time.Duration, error) { return time.Hour, nil }
func (l *oneShutdown) OverrideInhibitDelayMax(context.Context, time.Duration) error {
	return errors.New("not expected")
}
func (l *oneShutdown) Inhibit(context.Context) (io.Closer, error) { return io.NopCloser(nil), nil }
func (l *oneShutdown) Close() error                               { return nil }
func (l *oneShutdown) PrepareForShutdown(ctx context.Context) (<-chan bool, error) {
	out := make(chan bool)
	go func() {
		defer close(out)
		select {
		case v := <-l.events:
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
			<-ctx.Done()
		case <-ctx.Done():
		}
	}()
	return out, nil
}

type noPods struct{}

func (noPods) ActivePods() []*v1.Pod { return nil }
func (noPods) TerminatePod(types.UID, nodeshutdown.TerminateOptions) <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
