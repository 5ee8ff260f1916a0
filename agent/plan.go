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
	// again (A.5, A.26). Its running containers are stopped (sidecars
	// last) and StopSandbox is set while its sandbox still runs.
	Terminal    bool
	StopSandbox bool
	// CreateSandbox (re)creates the sandbox with SandboxAttempt; every
	// existing sandbox and container of the pod is killed first (A.31).
	CreateSandbox  bool
	SandboxAttempt uint32
	// StartInit is the index of the init container to start, or -1.
	StartInit int
	// RestartSidecars lists restartable init containers (sidecars) to
	// restart after they exited, once the pod is past them.
	RestartSidecars []int
	// StartApp lists app container indices to start.
	StartApp []int
	// StartEphemeral lists ephemeral container indices to start: those
	// that never ran in the current sandbox (they never restart).
	StartEphemeral []int
	// Kill lists containers to stop and remove (unknown or stuck ones).
	Kill []*runtime.ContainerStatus
	// Unhealthy lists running containers to stop (through preStop) because
	// a liveness or startup probe failed; they restart per restartPolicy.
	Unhealthy []unhealthyKill
	// Waiting holds containers held back by restart back-off.
	Waiting map[string]waitingState
	// BackoffFrom holds, per container to restart that passed the restart
	// back-off check, the exit the check measured from: starting it, the
	// executor records the restart (backoff.next) with that time, as the
	// kubelet's doBackOff does. A start without an earlier exit is absent.
	BackoffFrom map[string]time.Time
	// CheckedKills lists containers (by ID) killed for a failed probe whose
	// first back-off check held their restart back: from then on their own
	// exit counts (see backoffRefs). The worker remembers them.
	CheckedKills []string
	// RequeueAfter asks for another sync after this delay (0: no timer).
	RequeueAfter time.Duration
	// Resize lists running containers to resize in place; ResizeRestarts
	// counts those in Unhealthy restarted for a resize instead.
	Resize         []containerResize
	ResizeRestarts int
}

// unhealthyKill is a container to kill after a failed probe.
type unhealthyKill struct {
	Container *runtime.ContainerStatus
	// Message is the Killing event's message, e.g. "Container app failed
	// liveness probe, will be restarted".
	Message string
	// Grace is the probe-level terminationGracePeriodSeconds, if set (B.12).
	Grace *int64
	// Restart: the container is restarted after the kill whatever its exit
	// code (the Killing message promises it), as the kubelet does (B.9).
	Restart bool
}

// probeFailure is a failed liveness or startup probe of a running container.
type probeFailure struct {
	// Probe is "liveness" or "startup".
	Probe string
	Grace *int64
}

// planExtras is what the planner needs beyond the runtime state: results
// the worker keeps (probe results, deadlines).
type planExtras struct {
	// Started reports whether the running container with this ID passed
	// its startup probe (true when it has none); nil: always true.
	Started func(name, containerID string) bool
	// ProbeFailed holds running containers (by ID) whose liveness or
	// startup probe failed.
	ProbeFailed map[string]probeFailure
	// Failure is set once the pod failed for good (DeadlineExceeded).
	Failure *podFailure
	// RestartAnyway holds exited containers (by ID) killed for a failed
	// probe with the promise of a restart (unhealthyKill.Restart): they are
	// restarted even if they exited 0 under restartPolicy OnFailure.
	RestartAnyway map[string]bool
	// KillChecked holds the containers of RestartAnyway whose restart the
	// back-off held back once (podActions.CheckedKills).
	KillChecked map[string]bool
	// Actuated returns what a running container runs with (its cpu and
	// memory), false when unknown; nil: no resize is planned.
	Actuated func(cs *runtime.ContainerStatus) (v1.ResourceRequirements, bool)
	// Limits turns container resources into the runtime's (whether a
	// resize needs a runtime call).
	Limits containerLimits
}

// podFailure is a pod-level failure that ends the pod (A.9).
type podFailure struct {
	Reason, Message string
	// Grace replaces the pod's grace period for the stop (nil: the pod's).
	Grace *int64
	// Conditions are set on the pod status (TerminatePod's).
	Conditions []v1.PodCondition
	// KeepSucceeded: a pod that succeeded stays Succeeded (the node
	// shutdown manager's kill), where others become Failed.
	KeepSucceeded bool
}

func (x planExtras) started(name, id string) bool {
	return x.Started == nil || x.Started(name, id)
}

// waitingState is a Waiting reason the planner or executor decided.
type waitingState struct {
	Reason, Message string
}

// restartBackoffKey names a container's restart back-off entry: its name
// and its definition's hash, as the kubelet's GetStableKey, so that a new
// image starts a crash-looping container again without waiting out the
// old back-off.
func restartBackoffKey(c *v1.Container) string { return "restart/" + c.Name + "/" + containerHash(c) }

// restartCheck is what the restart back-off check needs (holdBack).
type restartCheck struct {
	now  time.Time
	bo   *backoff
	refs map[string]backoffRef
}

// computePodActions is the pure planner: from the pod spec and what the
// runtime holds, what should happen next. It never performs I/O and
// changes none of its inputs (bo included).
func computePodActions(pod *v1.Pod, st *podState, now time.Time, bo *backoff, x planExtras) podActions {
	a := podActions{StartInit: -1, Waiting: map[string]waitingState{}, BackoffFrom: map[string]time.Time{}}
	sb := st.sandbox()
	var latest map[string]*runtime.ContainerStatus
	if sb != nil {
		latest = st.latestIn(sb.ID)
	}
	if x.Failure != nil || terminalPhase(pod, latest, x.RestartAnyway) != "" {
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
	a.Unhealthy = unhealthy(pod, latest, x)
	killed := map[string]bool{}
	for _, u := range a.Unhealthy {
		killed[u.Container.ID] = true
	}
	var restarts []unhealthyKill
	a.Resize, restarts = planResize(pod, latest, x, killed)
	a.Unhealthy, a.ResizeRestarts = append(a.Unhealthy, restarts...), len(restarts)
	// Ephemeral containers start whether or not the pod is initialized,
	// as in the kubelet.
	for i, c := range ephemeralContainers(pod) {
		if latest[c.Name] == nil {
			a.StartEphemeral = append(a.StartEphemeral, i)
		}
	}
	rc := restartCheck{now: now, bo: bo, refs: backoffRefs(st, latest, x)}
	if !planInit(pod, latest, rc, x, &a) {
		return a
	}
	planApps(pod, latest, rc, x.RestartAnyway, &a)
	return a
}

// backoffRef is the exit a container's restart back-off is measured from.
type backoffRef struct {
	// at: the exit's FinishedAt; zero: no exit to measure from, so the
	// restart is neither checked nor recorded.
	at time.Time
	// killID: the latest instance, killed for a failed probe, whose first
	// check this is (it is not the instance measured from).
	killID string
}

// backoffRefs returns, per container whose latest instance (in the current
// sandbox) exited, the exit its restart back-off is measured from. The
// kubelet's doBackOff measures from the latest exited instance in the pod
// status it took before the sync's kills; a container killed for a failed
// liveness or startup probe is killed and restarted in that same sync, so
// its first restart is measured from the instance before it (none for a
// first kill: no check). If that first check holds it back, the kubelet's
// later syncs see the killed instance as the latest exit: so do we, once
// the worker knows the check was made (planExtras.KillChecked). A container
// that exited by itself is measured from its own exit, as in the kubelet.
func backoffRefs(st *podState, latest map[string]*runtime.ContainerStatus, x planExtras) map[string]backoffRef {
	out := map[string]backoffRef{}
	for name, cs := range latest {
		if cs.State != runtime.ContainerExited {
			continue
		}
		if !x.RestartAnyway[cs.ID] || x.KillChecked[cs.ID] {
			out[name] = backoffRef{at: cs.FinishedAt}
			continue
		}
		ref := backoffRef{killID: cs.ID}
		past := false
		for _, old := range st.history(name) { // newest first
			if old == cs {
				past = true
				continue
			}
			if past && old.State == runtime.ContainerExited {
				ref.at = old.FinishedAt
				break
			}
		}
		out[name] = ref
	}
	return out
}

// unhealthy lists the running containers to kill and restart: those whose
// definition changed (an API pod's image updated; app containers and
// sidecars, as in the kubelet's computePodActions) and those whose liveness
// or startup probe failed, with the kubelet's Killing message (B.10, B.13).
func unhealthy(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, x planExtras) []unhealthyKill {
	var out []unhealthyKill
	for _, c := range allContainers(pod) {
		cs := latest[c.Name]
		if cs == nil || cs.State != runtime.ContainerRunning {
			continue
		}
		if (isApp(pod, c) || isSidecar(c)) && definitionChanged(c, cs) {
			msg := fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)
			out = append(out, unhealthyKill{Container: cs, Message: msg, Restart: true})
			continue
		}
		f, ok := x.ProbeFailed[cs.ID]
		if !ok {
			continue
		}
		msg := fmt.Sprintf("Container %s failed %s probe", c.Name, f.Probe)
		restart := restartsAfterProbeKill(c, pod)
		if restart {
			msg += ", will be restarted"
		}
		out = append(out, unhealthyKill{Container: cs, Message: msg, Grace: f.Grace, Restart: restart})
	}
	return out
}

// allContainers returns init then app containers.
func allContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// ephemeralContainers returns the pod's ephemeral containers as
// Containers (their common fields), pointing into pod's spec.
func ephemeralContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// isApp reports whether c (a pointer into pod's spec) is an app container.
func isApp(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.Containers {
		if &pod.Spec.Containers[i] == c {
			return true
		}
	}
	return false
}

// isSidecar reports whether c is a restartable init container.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
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
	for _, c := range pod.Spec.EphemeralContainers {
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
// of them completed (sidecars: started), so app containers may start.
func planInit(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, rc restartCheck, x planExtras, a *podActions) bool {
	initialized := appsCreated(pod, latest)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := latest[c.Name]
		if isSidecar(c) {
			if !planSidecar(pod, c, i, cs, initialized || laterStarted(pod, latest, i), rc, x, a) {
				return false
			}
			continue
		}
		if initialized {
			continue
		}
		switch {
		case cs == nil:
			a.StartInit = i
			return false
		case cs.State == runtime.ContainerExited && cs.ExitCode == 0:
			continue
		case cs.State == runtime.ContainerExited:
			// Failed init container: retried per restartPolicy, Always acting
			// as OnFailure (A.26). Never was handled as terminal.
			if holdBack(pod, c, rc, a) {
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

// planSidecar plans restartable init container c (index i). passed: the
// pod already went past it, so a restart does not block what follows. It
// reports whether the containers after it may proceed.
func planSidecar(pod *v1.Pod, c *v1.Container, i int, cs *runtime.ContainerStatus, passed bool, rc restartCheck, x planExtras, a *podActions) bool {
	switch {
	case cs == nil:
		if passed {
			a.RestartSidecars = append(a.RestartSidecars, i)
			return true
		}
		a.StartInit = i
		return false
	case cs.State == runtime.ContainerRunning:
		return passed || x.started(c.Name, cs.ID)
	case cs.State == runtime.ContainerExited:
		// Sidecars always restart, whatever the pod's restartPolicy.
		if !holdBack(pod, c, rc, a) {
			if passed {
				a.RestartSidecars = append(a.RestartSidecars, i)
			} else {
				a.StartInit = i
			}
		}
		return passed
	default:
		return passed
	}
}

// appsCreated reports whether an app container exists in the current
// sandbox: the pod was initialized then, even if init containers are gone.
func appsCreated(pod *v1.Pod, latest map[string]*runtime.ContainerStatus) bool {
	for _, c := range pod.Spec.Containers {
		if latest[c.Name] != nil {
			return true
		}
	}
	return false
}

// laterStarted reports whether an init container after index i exists.
func laterStarted(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, i int) bool {
	for _, c := range pod.Spec.InitContainers[i+1:] {
		if latest[c.Name] != nil {
			return true
		}
	}
	return false
}

// planApps starts missing app containers and restarts exited ones per
// restartPolicy, or because restartAnyway holds their ID (probe kills).
func planApps(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, rc restartCheck, restartAnyway map[string]bool, a *podActions) {
	for i, c := range pod.Spec.Containers {
		cs := latest[c.Name]
		switch {
		case cs == nil:
			a.StartApp = append(a.StartApp, i)
		case cs.State == runtime.ContainerExited && (containerShouldRestart(&pod.Spec.Containers[i], pod, cs.ExitCode) || restartAnyway[cs.ID]):
			if !holdBack(pod, &pod.Spec.Containers[i], rc, a) {
				a.StartApp = append(a.StartApp, i)
			}
		}
	}
}

// holdBack reports whether back-off delays restarting container c,
// recording the CrashLoopBackOff waiting state and the time to look again
// (A.13, A.15); a restart it lets through gets its BackoffFrom. Like the
// kubelet's doBackOff, with the exit backoffRefs chose.
func holdBack(pod *v1.Pod, c *v1.Container, rc restartCheck, a *podActions) bool {
	name := c.Name
	ref := rc.refs[name]
	if ref.at.IsZero() {
		return false
	}
	key := restartBackoffKey(c)
	until, in := rc.bo.inBackOffSince(key, ref.at, rc.now)
	if !in {
		a.BackoffFrom[name] = ref.at
		return false
	}
	if ref.killID != "" {
		a.CheckedKills = append(a.CheckedKills, ref.killID)
	}
	a.Waiting[name] = waitingState{
		Reason:  reasonCrashLoopBackOff,
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", rc.bo.delay(key), name, podDesc(pod)),
	}
	if d := until.Sub(rc.now); a.RequeueAfter == 0 || d < a.RequeueAfter {
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
// progress, "" otherwise (A.5, A.26), as the kubelet's getPhase with
// container restart rules: Failed once an init container failed and will
// not restart; once every app container exited and none restarts,
// Succeeded if all exited 0, else Failed. An app container whose ID is in
// restartAnyway (killed by a probe, restart promised) is still to restart.
func terminalPhase(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, restartAnyway map[string]bool) v1.PodPhase {
	if latest == nil {
		return ""
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := latest[c.Name]
		if !isSidecar(c) && cs != nil && cs.State == runtime.ContainerExited && cs.ExitCode != 0 && !containerShouldRestart(c, pod, cs.ExitCode) {
			return v1.PodFailed
		}
	}
	failed := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := latest[c.Name]
		if cs == nil || cs.State != runtime.ContainerExited || restartAnyway[cs.ID] || containerShouldRestart(c, pod, cs.ExitCode) {
			return ""
		}
		failed = failed || cs.ExitCode != 0
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
