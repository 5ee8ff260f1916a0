package agent

import (
	"context"
	"testing"
)

// TestPodRequests: a kill's grace period is kept unless a later kill gives
// one; a kill, an eviction and a TerminatePod cancel the pull in progress,
// and a pull started while killing is cancelled at once; the first
// eviction wins; a TerminatePod is refused while killing and answered by
// terminationDone; an update is taken once.
func TestPodRequests(t *testing.T) {
	grace := func(g int64) *int64 { return &g }
	pulling := func(r *podRequests) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		r.pullStarted(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name string
		ask  func(r *podRequests)
	}{
		{"kill", func(r *podRequests) { r.kill(nil) }},
		{"evict", func(r *podRequests) { r.evict("s", "m") }},
		{"terminate", func(r *podRequests) { r.terminate(TerminateOptions{Reason: "r"}) }},
	} {
		t.Run(tc.name+" cancels the pull", func(t *testing.T) {
			var r podRequests
			ctx := pulling(&r)
			tc.ask(&r)
			if ctx.Err() == nil {
				t.Error("pull not cancelled")
			}
		})
	}

	var r podRequests
	r.kill(grace(5))
	r.kill(nil)
	if term, g := r.isTerminating(); !term || g == nil || *g != 5 {
		t.Errorf("after kill(5), kill(nil): %v %v, want the grace of 5 kept", term, g)
	}
	r.kill(grace(1))
	if _, g := r.isTerminating(); g == nil || *g != 1 {
		t.Errorf("after kill(1): grace %v, want 1", g)
	}
	if ctx := pulling(&r); ctx.Err() == nil {
		t.Error("a pull started while killing is not cancelled")
	}
	if _, ok := r.terminate(TerminateOptions{}); ok {
		t.Error("TerminatePod accepted while killing")
	}

	var e podRequests
	e.evict("first", "m1")
	e.evict("second", "m2")
	if msg, sig := e.eviction(); msg != "m1" || sig != "first" {
		t.Errorf("eviction %q %q, want the first", msg, sig)
	}
	done, ok := e.terminate(TerminateOptions{Reason: "a"})
	done2, _ := e.terminate(TerminateOptions{Reason: "b"})
	if o, has := e.termination(); !ok || !has || o.Reason != "a" {
		t.Errorf("termination %+v %v, want the first request's", o, has)
	}
	e.terminationDone()
	if !isClosed(done) || !isClosed(done2) {
		t.Error("terminationDone left a request's channel open")
	}
	e.update(testPod("Always", nil, "a"))
	if e.takeUpdate() == nil || e.takeUpdate() != nil {
		t.Error("an update is not taken exactly once")
	}
}
