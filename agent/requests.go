package agent

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// podRequests are what other goroutines ask of a pod worker: to terminate
// the pod (kill), to take a newer object of it (update), to evict it, to
// fail it (TerminatePod); a kill, an eviction or a TerminatePod also
// cancels the image pull in progress. The worker takes them at its next
// sync. Safe for concurrent use; nothing blocks.
type podRequests struct {
	mu          sync.Mutex
	terminating bool
	// graceOver: the kill's grace period (nil: the pod's own).
	graceOver *int64
	// updated: a newer object of the pod (an API pod's labels, image or
	// activeDeadlineSeconds edited), taken by the next sync.
	updated *v1.Pod
	// cancelPull cancels the image pull in progress, if any (see
	// podWorker.pullContext): a kill does not wait for a download.
	cancelPull context.CancelFunc
	// evictMsg: an eviction is requested (see evict), for evictSignal.
	evictMsg, evictSignal string
	// terminateReq: a TerminatePod is requested (see terminate).
	terminateReq *terminateRequest
}

// kill requests the pod's termination with grace (seconds) if set, else
// the pod's terminationGracePeriodSeconds; a later kill with a grace
// period overrides. Idempotent.
func (r *podRequests) kill(grace *int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.terminating || grace != nil {
		r.terminating, r.graceOver = true, grace
	}
	r.cancelPullLocked()
}

// isTerminating reports whether a kill was requested, with its grace.
func (r *podRequests) isTerminating() (bool, *int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminating, r.graceOver
}

// update records p as the pod's newest object.
func (r *podRequests) update(p *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updated = p
}

// takeUpdate returns the newest object given by update since the last
// call, nil if none.
func (r *podRequests) takeUpdate() *v1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.updated
	r.updated = nil
	return p
}

// evict requests an eviction for signal with msg (the first one wins).
func (r *podRequests) evict(signal, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.evictMsg == "" {
		r.evictMsg, r.evictSignal = msg, signal
	}
	// An evicted pod starts nothing more: its image pull need not finish.
	r.cancelPullLocked()
}

// eviction returns the requested eviction's message and signal ("": none).
func (r *podRequests) eviction() (msg, signal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.evictMsg, r.evictSignal
}

// terminate requests TerminatePod's failure (the first request's options
// win) and returns the channel closed when it is done (terminationDone);
// ok is false, and nothing requested, when the pod is being killed.
func (r *podRequests) terminate(o TerminateOptions) (done <-chan struct{}, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminating {
		return nil, false
	}
	ch := make(chan struct{})
	if r.terminateReq == nil {
		r.terminateReq = &terminateRequest{opts: o}
	}
	r.terminateReq.done = append(r.terminateReq.done, ch)
	r.cancelPullLocked()
	return ch, true
}

// termination returns the options of the requested TerminatePod, and
// whether there is one.
func (r *podRequests) termination() (TerminateOptions, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminateReq == nil {
		return TerminateOptions{}, false
	}
	return r.terminateReq.opts, true
}

// terminationDone closes the channels of the TerminatePod requests made
// so far; a later request is answered by the next call.
func (r *podRequests) terminationDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminateReq == nil {
		return
	}
	for _, ch := range r.terminateReq.done {
		close(ch)
	}
	r.terminateReq.done = nil
}

// pullStarted records cancel as the pull in progress; it is called at
// once when the pod is being killed.
func (r *podRequests) pullStarted(cancel context.CancelFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminating {
		cancel()
	}
	r.cancelPull = cancel
}

// pullDone forgets the pull in progress.
func (r *podRequests) pullDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancelPull = nil
}

func (r *podRequests) cancelPullLocked() {
	if r.cancelPull != nil {
		r.cancelPull()
	}
}
