package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TerminateOptions say how TerminatePod ends a pod, as the kubelet's
// TerminatePodOptions (the node shutdown manager's kill).
type TerminateOptions struct {
	// GracePeriodSeconds replaces the pod's terminationGracePeriodSeconds
	// (nil: the pod's); the kubelet's 2 s minimum still applies.
	GracePeriodSeconds *int64
	// Reason and Message become the pod status's reason and message.
	Reason, Message string
	// Conditions are set on the pod status (replacing those of the same
	// type), e.g. DisruptionTarget.
	Conditions []v1.PodCondition
}

// PodAdmitter is an admission check that runs after the agent's own (the
// kubelet's PodAdmitHandler): a pod it refuses fails at once with reason
// and message ("Pod was rejected: " is prefixed to the message). It must
// be safe for concurrent use and return at once.
type PodAdmitter func(pod *v1.Pod) (admit bool, reason, message string)

// terminateRequest is a pending TerminatePod (podRequests' lock).
type terminateRequest struct {
	opts TerminateOptions
	// done are closed once the pod's containers and sandbox are stopped.
	done []chan struct{}
}

// ActivePods returns the pods the agent runs that are not finished: not
// rejected, not in a terminal phase and not orphans (the kubelet's
// GetActivePods). Pods being deleted are included: their termination is
// still under way. Copies; safe for concurrent use.
func (a *Agent) ActivePods() []*v1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*v1.Pod
	for uid, w := range a.workers {
		if w.orphan || w.rejected || w.stopped.Load() {
			continue
		}
		p := a.status.get(uid)
		if p == nil {
			p = w.initial
		}
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		out = append(out, p.DeepCopy())
	}
	return out
}

// TerminatePod fails the pod uid for good, as an eviction does: its
// containers are stopped (preStop hooks, sidecar order) within the grace
// period of o, its sandbox is stopped, and its status becomes phase Failed
// (Succeeded stays Succeeded) with o's reason, message and conditions. The
// pod stays known to the agent (a source still declares it) and is not
// restarted. The returned channel is closed once the pod's containers and
// sandbox are stopped, or the pod is gone; an unknown pod's at once. A pod
// already being deleted keeps its deletion (and grace period): its
// channel closes when its worker is done. Non-blocking, safe for
// concurrent use.
func (a *Agent) TerminatePod(uid types.UID, o TerminateOptions) <-chan struct{} {
	a.mu.Lock()
	w := a.workers[uid]
	a.mu.Unlock()
	if w == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return w.terminateAbnormally(o)
}

// terminateAbnormally requests TerminatePod's failure of the worker's pod
// (the first request's options win). Non-blocking.
func (w *podWorker) terminateAbnormally(o TerminateOptions) <-chan struct{} {
	ch, ok := w.req.terminate(o)
	if !ok {
		return w.done
	}
	w.wake()
	return ch
}

// takeTermination turns a pending TerminatePod into the pod's failure
// (worker goroutine only), unless the pod already failed.
func (w *podWorker) takeTermination() {
	o, ok := w.req.termination()
	if !ok || w.failure != nil {
		return
	}
	w.failure = &podFailure{Reason: o.Reason, Message: o.Message, Grace: o.GracePeriodSeconds,
		Conditions: o.Conditions, KeepSucceeded: true}
	w.log.Info("terminating pod", "reason", o.Reason, "message", o.Message)
}

// admitByOthers runs the agent's PodAdmitters on pod; the first refusal
// is the pod's failure.
func (a *Agent) admitByOthers(pod *v1.Pod) *podFailure {
	for _, admit := range a.cfg.Admitters {
		if ok, reason, msg := admit(pod); !ok {
			return &podFailure{Reason: reason, Message: "Pod was rejected: " + msg}
		}
	}
	return nil
}
