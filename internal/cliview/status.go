// Package cliview renders pods for the skiff CLI the way kubectl does:
// the `kubectl get pods` table (STATUS, READY, RESTARTS and AGE computed as
// kubectl's printPod computes them) and -o json|yaml output. It holds pure
// functions over k8s.io/api types and does no I/O beyond the given writer.
//
// The package is neutral: it imports only k8s.io libraries, so both the
// skiff CLI and skiff-apiserver's table printers (shim/printers) use it;
// it may not import node-side or shim packages (the depguard rules in
// .golangci.yml).
package cliview

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// nodeUnreachablePodReason is the pod status reason the node controller sets
// on pods of a lost node (k8s.io/kubernetes/pkg/util/node).
const nodeUnreachablePodReason = "NodeLost"

// podSummary holds the computed columns of one pod row.
type podSummary struct {
	reason      string
	ready       int
	total       int
	restarts    int
	lastRestart time.Time // zero: no terminated previous run known
}

// PodStatusReason returns the STATUS column of `kubectl get pods` for pod,
// computed as kubectl's printPod does (k8s.io/kubernetes
// pkg/printers/internalversion/printers.go), in this order:
//   - the phase, or pod.Status.Reason when set; SchedulingGated when the
//     PodScheduled condition says so;
//   - while initializing, for the first init container that is neither
//     completed nor a started sidecar: "Init:<terminated reason>",
//     "Init:Signal:N", "Init:ExitCode:N", "Init:<waiting reason>" (other
//     than PodInitializing) or "Init:i/n" (A.34: `Init:0/2`);
//   - once initialized, the waiting or terminated reason of the first app
//     container that has one ("CrashLoopBackOff", "Completed",
//     "ContainerCreating", "PodInitializing", "Signal:N", "ExitCode:N");
//     "Completed" turns back into "Running" (Ready condition true) or
//     "NotReady" while some container still runs;
//   - with a deletionTimestamp: "Unknown" for a NodeLost pod, else
//     "Terminating" unless the phase is Succeeded or Failed.
//
// Pure and safe for concurrent use.
func PodStatusReason(pod *v1.Pod) string {
	return summarize(pod).reason
}

// summarize computes the READY, STATUS and RESTARTS columns of pod.
func summarize(pod *v1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), reason: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			s.reason = v1.PodReasonSchedulingGated
		}
	}
	sidecars := restartableInitContainers(pod)
	s.total += len(sidecars)

	initializing, sidecarRestarts, sidecarLast := s.addInitContainers(pod, sidecars)
	if !initializing || hasCondition(pod, v1.PodInitialized) {
		// Like kubectl: once initialized, only sidecar restarts count
		// among init containers.
		s.restarts, s.lastRestart = sidecarRestarts, sidecarLast
		s.addAppContainers(pod)
	}

	if pod.DeletionTimestamp != nil {
		if pod.Status.Reason == nodeUnreachablePodReason {
			s.reason = "Unknown"
		} else if pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
			s.reason = "Terminating"
		}
	}
	return s
}

// addInitContainers walks the init container statuses up to the first one
// that holds the pod back, counting restarts and ready sidecars. It reports
// whether the pod is initializing and the restarts of sidecars alone.
func (s *podSummary) addInitContainers(pod *v1.Pod, sidecars map[string]bool) (initializing bool, sidecarRestarts int, sidecarLast time.Time) {
	for i, cs := range pod.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, lastTermination(cs))
		if sidecars[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			sidecarLast = later(sidecarLast, lastTermination(cs))
		}
		term, wait := cs.State.Terminated, cs.State.Waiting
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		case term != nil:
			s.reason = "Init:" + terminatedReason(term)
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			s.reason = "Init:" + wait.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return true, sidecarRestarts, sidecarLast
	}
	return false, sidecarRestarts, sidecarLast
}

// addAppContainers counts ready app containers and restarts; the reason of
// the first container with a waiting or terminated reason wins, as kubectl
// walks the statuses backwards.
func (s *podSummary) addAppContainers(pod *v1.Pod) {
	hasRunning := false
	statuses := pod.Status.ContainerStatuses
	for i := len(statuses) - 1; i >= 0; i-- {
		cs := statuses[i]
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, lastTermination(cs))
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			s.reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			s.reason = terminatedReason(cs.State.Terminated)
		case cs.Ready && cs.State.Running != nil:
			hasRunning = true
			s.ready++
		}
	}
	if s.reason == "Completed" && hasRunning {
		if hasCondition(pod, v1.PodReady) {
			s.reason = "Running"
		} else {
			s.reason = "NotReady"
		}
	}
}

// terminatedReason is the reason of a terminated state, else
// "Signal:N" or "ExitCode:N".
func terminatedReason(t *v1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// restartableInitContainers returns the names of the init containers with
// restartPolicy Always (sidecars).
func restartableInitContainers(pod *v1.Pod) map[string]bool {
	m := make(map[string]bool)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			m[c.Name] = true
		}
	}
	return m
}

func hasCondition(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func lastTermination(cs v1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return t.FinishedAt.Time
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
