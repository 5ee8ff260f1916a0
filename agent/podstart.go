package agent

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// podStart follows one pod's start for the start durations (Metrics'
// PodStartDuration and PodStartSLIDuration), as the kubelet's pod startup
// latency tracker: from the agent's first sight of the pod until the first
// status in which all of its containers run (the kubelet's
// hasPodStartedSLO), the SLI measured from the pod's creation and less the
// window from its first image pull's start to its last pull's end. Images
// already present take no pull, so for such pods the two differ only by
// the time between creation and first sight (none for static pods, which
// have no creation timestamp). Owned by the pod worker's goroutine.
type podStart struct {
	// firstSeen is when the agent took the pod on.
	firstSeen time.Time
	// firstPull and lastPull bound the pod's image pulls before it
	// started (zero: none).
	firstPull, lastPull time.Time
	// done: the durations were recorded, or never will be (a pod that ran
	// before the agent started, an orphan).
	done bool
}

// pullStarted notes the start of an image pull for the pod at now.
func (s *podStart) pullStarted(now time.Time) {
	if !s.done && s.firstPull.IsZero() {
		s.firstPull = now
	}
}

// pullEnded notes the end (success or failure) of an image pull at now.
func (s *podStart) pullEnded(now time.Time) {
	if !s.done && !s.firstPull.IsZero() {
		s.lastPull = now
	}
}

// durations returns the pod's start durations if status, observed at
// now, is the first with all of pod's containers running, and then marks
// the start done; ok is false otherwise. Pure but for that mark.
func (s *podStart) durations(pod *v1.Pod, status *v1.PodStatus, now time.Time) (total, sli time.Duration, ok bool) {
	if s.done || status == nil || !allContainersRunning(pod, status) {
		return 0, 0, false
	}
	s.done = true
	total = now.Sub(s.firstSeen)
	from := s.firstSeen
	if c := pod.CreationTimestamp.Time; !c.IsZero() && c.Before(from) {
		from = c
	}
	sli = now.Sub(from)
	if !s.lastPull.IsZero() {
		sli -= s.lastPull.Sub(s.firstPull)
	}
	return total, max(sli, 0), true
}

// allContainersRunning reports whether status shows every container of
// pod's spec running (init and ephemeral containers aside). Pure.
func allContainersRunning(pod *v1.Pod, status *v1.PodStatus) bool {
	if len(status.ContainerStatuses) < len(pod.Spec.Containers) || len(pod.Spec.Containers) == 0 {
		return false
	}
	for i := range status.ContainerStatuses {
		if status.ContainerStatuses[i].State.Running == nil {
			return false
		}
	}
	return true
}

// recordStart records the pod's start durations once all of its
// containers run (worker goroutine only; see podStart).
func (w *podWorker) recordStart(now time.Time) {
	if total, sli, ok := w.start.durations(w.pod, w.status, now); ok {
		m := w.d.metrics()
		m.PodStartDuration(total)
		m.PodStartSLIDuration(sli)
	}
}
