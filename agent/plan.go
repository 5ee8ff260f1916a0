package agent

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// podActions is the planner's answer: the next step for one pod. The
// executor applies it; the worker then observes and plans again, so each
// plan is one step of the pod's progress (sandbox, then init containers one
// at a time, then app containers; A.24).
type podActions struct {
	// Terminal: the pod reached Succeeded or Failed and nothing will run
	// again (A.5, A.26). StopSandbox is set while its sandbox still runs.
	Terminal    bool
	StopSandbox bool
	// CreateSandbox (re)creates the sandbox with SandboxAttempt; every
	// existing sandbox and container of the pod is killed first (A.31).
	CreateSandbox  bool
	SandboxAttempt uint32
	// StartInit is the index of the init container to start, or -1.
	StartInit int
	// StartApp lists app container indices to start.
	StartApp []int
	// Kill lists containers to stop and remove (unknown or stuck ones).
	Kill []*runtime.ContainerStatus
	// Waiting holds containers held back by restart back-off.
	Waiting map[string]waitingState
	// RequeueAfter asks for another sync after this delay (0: no timer).
	RequeueAfter time.Duration
}

// waitingState is a Waiting reason the planner or executor decided.
type waitingState struct {
	Reason, Message string
}

// restartBackoffKey names a container's back-off entry.
func restartBackoffKey(name string) string { return "restart/" + name }

// computePodActions is the pure planner: from the pod spec and what the
// runtime holds, what should happen next. It never performs I/O.
func computePodActions(pod *v1.Pod, st *podState, now time.Time, bo *backoff) podActions {
	a := podActions{StartInit: -1, Waiting: map[string]waitingState{}}
	sb := st.sandbox()
	var latest map[string]*runtime.ContainerStatus
	if sb != nil {
		latest = st.latestIn(sb.ID)
	}
	if terminalPhase(pod, latest) != "" {
		a.Terminal = true
		a.StopSandbox = sb != nil && sb.State == runtime.SandboxReady
		return a
	}
	if sb == nil || sb.State != runtime.SandboxReady {
		a.CreateSandbox = true
		if sb != nil {
			a.SandboxAttempt = sb.Attempt + 1
		}
		return a
	}
	a.Kill = unknownContainers(pod, latest, st, sb.ID)
	if !planInit(pod, latest, now, bo, &a) {
		return a
	}
	planApps(pod, latest, now, bo, &a)
	return a
}

// unknownContainers are running or created containers of the current
// sandbox that the spec does not name, plus containers stuck in Created
// (a start that failed, or a crash of skiff between create and start).
func unknownContainers(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, st *podState, sandboxID string) []*runtime.ContainerStatus {
	names := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		names[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		names[c.Name] = true
	}
	var kill []*runtime.ContainerStatus
	for _, c := range st.Containers {
		if c.SandboxID != sandboxID {
			continue
		}
		stuck := c.State == runtime.ContainerCreated && latest[c.Name] == c
		unknown := !names[c.Name] && (c.State == runtime.ContainerRunning || c.State == runtime.ContainerCreated)
		if stuck || unknown {
			kill = append(kill, c)
		}
	}
	return kill
}

// planInit walks init containers in order (A.24). It reports whether all
// of them completed, so app containers may start.
func planInit(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, now time.Time, bo *backoff, a *podActions) bool {
	for i, c := range pod.Spec.InitContainers {
		cs := latest[c.Name]
		switch {
		case cs == nil:
			a.StartInit = i
			return false
		case cs.State == runtime.ContainerExited && cs.ExitCode == 0:
			continue
		case cs.State == runtime.ContainerExited:
			// Failed init container: retried per restartPolicy, Always acting
			// as OnFailure (A.26). Never was handled as terminal.
			if holdBack(pod, c.Name, cs, now, bo, a) {
				return false
			}
			a.StartInit = i
			return false
		default: // running, created (being replaced) or unknown: wait
			return false
		}
	}
	return true
}

func planApps(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, now time.Time, bo *backoff, a *podActions) {
	for i, c := range pod.Spec.Containers {
		cs := latest[c.Name]
		switch {
		case cs == nil:
			a.StartApp = append(a.StartApp, i)
		case cs.State == runtime.ContainerExited && shouldRestart(pod.Spec.RestartPolicy, cs.ExitCode):
			if !holdBack(pod, c.Name, cs, now, bo, a) {
				a.StartApp = append(a.StartApp, i)
			}
		}
	}
}

// holdBack reports whether back-off delays restarting cs, recording the
// CrashLoopBackOff waiting state and the time to look again (A.13, A.15).
func holdBack(pod *v1.Pod, name string, cs *runtime.ContainerStatus, now time.Time, bo *backoff, a *podActions) bool {
	key := restartBackoffKey(name)
	until := bo.until(key, cs.FinishedAt, now)
	if until.IsZero() {
		return false
	}
	a.Waiting[name] = waitingState{
		Reason:  "CrashLoopBackOff",
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", bo.delay(key, now), name, podDesc(pod)),
	}
	if d := until.Sub(now); a.RequeueAfter == 0 || d < a.RequeueAfter {
		a.RequeueAfter = d
	}
	return true
}

func shouldRestart(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// terminalPhase returns Succeeded or Failed when the pod can make no more
// progress, "" otherwise (A.5, A.26).
func terminalPhase(pod *v1.Pod, latest map[string]*runtime.ContainerStatus) v1.PodPhase {
	if latest == nil {
		return ""
	}
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		for _, c := range pod.Spec.InitContainers {
			if cs := latest[c.Name]; cs != nil && cs.State == runtime.ContainerExited && cs.ExitCode != 0 {
				return v1.PodFailed
			}
		}
	}
	if pod.Spec.RestartPolicy == v1.RestartPolicyAlways {
		return ""
	}
	failed := false
	for _, c := range pod.Spec.Containers {
		cs := latest[c.Name]
		if cs == nil || cs.State != runtime.ContainerExited {
			return ""
		}
		if cs.ExitCode != 0 {
			if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure {
				return ""
			}
			failed = true
		}
	}
	if failed {
		return v1.PodFailed
	}
	return v1.PodSucceeded
}

// podDesc formats a pod as the kubelet does in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
