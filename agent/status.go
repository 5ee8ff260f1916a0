package agent

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/runtime"
)

// statusInput is everything computePodStatus looks at.
type statusInput struct {
	Pod   *v1.Pod
	State *podState
	// Waiting overrides the Waiting reason of containers that are not
	// running (image errors, back-off).
	Waiting  map[string]waitingState
	Previous *v1.PodStatus
	HostIPs  []string
	// StartTime is when the agent first took the pod on.
	StartTime time.Time
	Now       time.Time
	// Ready and Started give the probe results of running containers;
	// nil means true (no probes).
	Ready, Started func(name string) bool
	// InPostStart: containers whose postStart hook still runs (C.3).
	InPostStart map[string]bool
	// Failure is a pod-level failure (DeadlineExceeded).
	Failure *podFailure
	// RestartAnyway: exited containers (by ID) that restart whatever their
	// exit code (planExtras.RestartAnyway).
	RestartAnyway map[string]bool
	// RuntimeName is the runtime's name ("containerd", "cri-o"), the scheme
	// of container IDs in the status.
	RuntimeName string
	// RecursiveReadOnly: the runtime supports recursive read-only mounts
	// (what recursiveReadOnly: IfPossible resolves to).
	RecursiveReadOnly bool
	// Actuated returns what a running container runs with (resize);
	// nil: its allocation.
	Actuated func(cs *runtime.ContainerStatus) (v1.ResourceRequirements, bool)
	// ResizeConditions are PodResizePending and PodResizeInProgress, as
	// the worker keeps them; a terminal pod shows neither.
	ResizeConditions []v1.PodCondition
	// Stopped: the pod was deleted and its containers stopped: every
	// container is terminated (one that never ran or cannot be found as
	// ContainerStatusUnknown) and the phase terminal, as the kubelet's
	// TerminatePod.
	Stopped bool
}

// containerIDOf is a container's ID in a pod status: <runtime>://<id>, as
// the kubelet writes it.
func containerIDOf(runtimeName, id string) string { return runtimeName + "://" + id }

func (in statusInput) ready(name string) bool   { return in.Ready == nil || in.Ready(name) }
func (in statusInput) started(name string) bool { return in.Started == nil || in.Started(name) }

// computePodStatus derives the v1.PodStatus from the runtime state (pure).
func computePodStatus(in statusInput) v1.PodStatus {
	pod := in.Pod
	sb := in.State.sandbox()
	var latest map[string]*runtime.ContainerStatus
	if sb != nil {
		latest = in.State.latestIn(sb.ID)
	}
	s := v1.PodStatus{QOSClass: qosClass(pod)}
	s.InitContainerStatuses = containerStatuses(pod.Spec.InitContainers, in, latest, true)
	s.ContainerStatuses = containerStatuses(pod.Spec.Containers, in, latest, false)
	s.EphemeralContainerStatuses = ephemeralStatuses(pod, in, latest)
	statusResources(allContainers(pod), s.InitContainerStatuses, latest, in.Actuated)
	statusResources(allContainers(pod), s.ContainerStatuses, latest, in.Actuated)
	statusResources(ephemeralContainers(pod), s.EphemeralContainerStatuses, latest, in.Actuated)
	initialized := initDone(pod, latest, in.started)
	s.Phase = podPhase(pod, latest, in.RestartAnyway, s.ContainerStatuses, initialized)
	if !initialized && s.Phase == v1.PodRunning {
		s.Phase = v1.PodPending
	}
	if in.Stopped {
		terminateUnknown(s.InitContainerStatuses)
		terminateUnknown(s.ContainerStatuses)
		s.Phase = stoppedPhase(s.Phase, s.ContainerStatuses)
	}
	if f := in.Failure; f != nil {
		if !f.KeepSucceeded || s.Phase != v1.PodSucceeded {
			s.Phase = v1.PodFailed
		}
		s.Reason, s.Message = f.Reason, f.Message
	}
	s.Conditions = podConditions(pod, sb, &s, initialized, in.Previous, in.Now)
	s.ObservedGeneration = observedGeneration(pod, in.Previous)
	if in.Failure != nil {
		s.Conditions = withConditions(s.Conditions, in.Failure.Conditions, in.Previous, in.Now)
	}
	if s.Phase != v1.PodSucceeded && s.Phase != v1.PodFailed {
		s.Conditions = append(s.Conditions, in.ResizeConditions...)
	}
	if len(in.HostIPs) > 0 {
		s.HostIP = in.HostIPs[0]
		for _, ip := range in.HostIPs {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
		}
	}
	if sb != nil {
		ip := sb.IP
		if pod.Spec.HostNetwork {
			ip = s.HostIP
		}
		if ip != "" {
			s.PodIP = ip
			s.PodIPs = []v1.PodIP{{IP: ip}}
			for _, extra := range sb.AdditionalIPs {
				s.PodIPs = append(s.PodIPs, v1.PodIP{IP: extra})
			}
		}
	}
	if !in.StartTime.IsZero() {
		t := metav1.NewTime(in.StartTime)
		s.StartTime = &t
	}
	return s
}

// initDone reports whether all init containers exited 0 in the current
// sandbox and all sidecars started, or an app container already exists
// there (A.20).
func initDone(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, started func(string) bool) bool {
	if appsCreated(pod, latest) {
		return true
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := latest[c.Name]
		if isSidecar(c) {
			if cs == nil || cs.State != runtime.ContainerRunning || !started(c.Name) {
				return false
			}
			continue
		}
		if cs == nil || cs.State != runtime.ContainerExited || cs.ExitCode != 0 {
			return false
		}
	}
	return true
}

// ephemeralStatuses are the ephemeral containers' statuses: as an app
// container's, but never Ready (they take no part in the pod's readiness).
func ephemeralStatuses(pod *v1.Pod, in statusInput, latest map[string]*runtime.ContainerStatus) []v1.ContainerStatus {
	var out []v1.ContainerStatus
	for _, c := range ephemeralContainers(pod) {
		st := containerStatus(*c, in, latest[c.Name], false)
		st.Ready = false
		out = append(out, st)
	}
	return out
}

func containerStatuses(specs []v1.Container, in statusInput, latest map[string]*runtime.ContainerStatus, init bool) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for _, c := range specs {
		out = append(out, containerStatus(c, in, latest[c.Name], init))
	}
	return out
}

func containerStatus(c v1.Container, in statusInput, cs *runtime.ContainerStatus, init bool) v1.ContainerStatus {
	st := v1.ContainerStatus{Name: c.Name, Image: c.Image, VolumeMounts: volumeMountStatuses(c.VolumeMounts, in.RecursiveReadOnly)}
	hist := in.State.history(c.Name)
	if len(hist) > 0 {
		st.RestartCount = int32(hist[0].Attempt)
	}
	if cs == nil {
		// Started is false, not unset, as the kubelet's prober manager
		// sets it on every init and app container status.
		notStarted := false
		st.Started = &notStarted
		st.State.Waiting = defaultWaiting(in, init)
		if w, ok := in.Waiting[c.Name]; ok {
			st.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		if len(hist) > 0 {
			st.LastTerminationState = terminatedState(hist[0], in.RuntimeName)
		}
		return st
	}
	st.ContainerID = containerIDOf(in.RuntimeName, cs.ID)
	st.ImageID = cs.ImageRef
	st.User = containerUser(cs.User)
	st.State = containerState(cs, in.RuntimeName)
	if len(hist) > 1 && hist[0] == cs {
		st.LastTerminationState = terminatedState(hist[1], in.RuntimeName)
	}
	if w, ok := in.Waiting[c.Name]; ok && cs.State == runtime.ContainerExited {
		// Exited and held back: Waiting now, the run that ended is lastState.
		st.LastTerminationState = st.State
		st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	}
	running := cs.State == runtime.ContainerRunning
	if running && in.InPostStart[c.Name] {
		// Not Running before postStart completed (C.3).
		st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		running = false
	}
	started := running && in.started(c.Name)
	st.Started = &started
	st.Ready = started && in.ready(c.Name)
	if init && !isSidecar(&c) {
		st.Ready = cs.State == runtime.ContainerExited && cs.ExitCode == 0
	}
	return st
}

// volumeMountStatuses are a container's volumeMounts as its status lists
// them, the kubelet's way: every mount, and for a read-only one whether it
// is recursively read-only (Enabled or Disabled, resolved as the container
// was created; a mount that cannot be resolved says Disabled, the
// container itself failing with CreateContainerConfigError). Pure.
func volumeMountStatuses(mounts []v1.VolumeMount, rroSupported bool) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, vm := range mounts {
		st := v1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if rro, err := recursiveReadOnly(vm, rroSupported); err == nil && rro {
				mode = v1.RecursiveReadOnlyEnabled
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}

// containerUser is the identity the runtime reports, as the status's
// user.linux; nil where the runtime reports none (containerd 1.x).
func containerUser(u *runtime.ContainerUser) *v1.ContainerUser {
	if u == nil {
		return nil
	}
	return &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: u.UID, GID: u.GID, SupplementalGroups: slices.Clone(u.SupplementalGroups)}}
}

func defaultWaiting(in statusInput, init bool) *v1.ContainerStateWaiting {
	sb := in.State.sandbox()
	if init || sb == nil || sb.State != runtime.SandboxReady {
		if !init && len(in.Pod.Spec.InitContainers) > 0 {
			return &v1.ContainerStateWaiting{Reason: "PodInitializing"}
		}
		if init {
			return &v1.ContainerStateWaiting{Reason: "PodInitializing"}
		}
		return &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	if len(in.Pod.Spec.InitContainers) > 0 && !initDone(in.Pod, in.State.latestIn(sb.ID), in.started) {
		return &v1.ContainerStateWaiting{Reason: "PodInitializing"}
	}
	return &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
}

func containerState(cs *runtime.ContainerStatus, runtimeName string) v1.ContainerState {
	switch cs.State {
	case runtime.ContainerRunning:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}}
	case runtime.ContainerExited:
		return terminatedState(cs, runtimeName)
	default:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
}

func terminatedState(cs *runtime.ContainerStatus, runtimeName string) v1.ContainerState {
	if cs.State != runtime.ContainerExited {
		return v1.ContainerState{}
	}
	reason := cs.Reason
	if reason == "" {
		reason = "Completed"
		if cs.ExitCode != 0 {
			reason = "Error"
		}
	}
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode:    cs.ExitCode,
		Reason:      reason,
		Message:     cs.Message,
		StartedAt:   metav1.NewTime(cs.StartedAt),
		FinishedAt:  metav1.NewTime(cs.FinishedAt),
		ContainerID: containerIDOf(runtimeName, cs.ID),
	}}
}

// podPhase follows the kubelet's getPhase (A.5).
func podPhase(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, restartAnyway map[string]bool, app []v1.ContainerStatus, initialized bool) v1.PodPhase {
	if p := terminalPhase(pod, latest, restartAnyway); p != "" {
		return p
	}
	if !initialized {
		return v1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, cs := range app {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		// Not terminal (checked above): restarts are still coming.
		return v1.PodRunning
	default:
		return v1.PodPending
	}
}

// observedGeneration is the pod's metadata.generation, never less than
// what an earlier status observed (the kubelet's PodObservedGenerationTracking,
// GA in 1.35).
func observedGeneration(pod *v1.Pod, prev *v1.PodStatus) int64 {
	if prev != nil && prev.ObservedGeneration > pod.Generation {
		return prev.ObservedGeneration
	}
	return pod.Generation
}

// sandboxNotReady is the kubelet's reason for PodReadyToStartContainers=False
// (kuberuntime's PodSandboxChanged, 1.37), "" when the sandbox is ready.
func sandboxNotReady(sb *runtime.SandboxStatus) string {
	switch {
	case sb == nil:
		return "no pod sandbox exists"
	case sb.State != runtime.SandboxReady:
		return "pod sandbox is not ready"
	}
	return ""
}

// podConditions computes the kubelet-managed conditions (A.16, A.17,
// A.19-A.22), keeping lastTransitionTime while a condition's status holds;
// each observes the pod's generation.
func podConditions(pod *v1.Pod, sb *runtime.SandboxStatus, s *v1.PodStatus, initialized bool, prev *v1.PodStatus, now time.Time) []v1.PodCondition {
	terminal := s.Phase == v1.PodSucceeded || s.Phase == v1.PodFailed
	var conds []v1.PodCondition
	add := func(t v1.PodConditionType, ok bool, reason, msg string) {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: msg}
		if ok {
			c = v1.PodCondition{Type: t, Status: v1.ConditionTrue}
		}
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = transitionTime(prev, t, c.Status, now)
		conds = append(conds, c)
	}
	notReady := sandboxNotReady(sb)
	add(v1.PodReadyToStartContainers, notReady == "", "PodSandboxNotReady", notReady)
	add(v1.PodInitialized, initialized || terminalInitDone(pod, s), "ContainersNotInitialized",
		incomplete("containers with incomplete status", s.InitContainerStatuses, func(cs v1.ContainerStatus) bool {
			return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}))
	unready := incomplete("containers with unready status", readinessRelevant(pod, s), func(cs v1.ContainerStatus) bool { return cs.Ready })
	containersReady := unready == "" && !terminal
	ready, readyReason, readyMsg := containersReady, "ContainersNotReady", unready
	if terminal {
		unready, readyReason, readyMsg = "", "PodCompleted", ""
	}
	if containersReady {
		if missing := unmetGates(pod, prev); len(missing) > 0 {
			ready, readyReason = false, "ReadinessGatesNotReady"
			readyMsg = "corresponding condition of pod readiness gate " + strings.Join(missing, ", ") + " does not exist or is not True"
		}
	}
	ctrReason := "ContainersNotReady"
	if terminal {
		ctrReason = "PodCompleted"
	}
	add(v1.ContainersReady, containersReady, ctrReason, unready)
	add(v1.PodReady, ready, readyReason, readyMsg)
	add(v1.PodScheduled, true, "", "")
	return append(conds, externalConditions(pod, prev)...)
}

// readinessRelevant: the statuses ContainersReady looks at, sidecars first.
func readinessRelevant(pod *v1.Pod, s *v1.PodStatus) []v1.ContainerStatus {
	var out []v1.ContainerStatus
	for i, cs := range s.InitContainerStatuses {
		if i < len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, cs)
		}
	}
	return append(out, s.ContainerStatuses...)
}

// terminalInitDone: a pod that completed after its init containers keeps
// Initialized=True.
func terminalInitDone(pod *v1.Pod, s *v1.PodStatus) bool {
	for _, cs := range s.InitContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return len(pod.Spec.InitContainers) > 0 && s.Phase != v1.PodPending
}

func incomplete(what string, sts []v1.ContainerStatus, ok func(v1.ContainerStatus) bool) string {
	var names []string
	for _, cs := range sts {
		if !ok(cs) {
			names = append(names, cs.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: [%s]", what, strings.Join(names, " "))
}

// unmetGates lists readiness gates whose condition is not True (A.21, A.22).
func unmetGates(pod *v1.Pod, prev *v1.PodStatus) []string {
	var missing []string
	for _, g := range pod.Spec.ReadinessGates {
		if c := findCondition(prev, g.ConditionType); c == nil || c.Status != v1.ConditionTrue {
			missing = append(missing, string(g.ConditionType))
		}
	}
	return missing
}

// externalConditions preserves conditions skiff does not own (A.23).
func externalConditions(pod *v1.Pod, prev *v1.PodStatus) []v1.PodCondition {
	if prev == nil {
		return nil
	}
	owned := map[v1.PodConditionType]bool{
		v1.PodReadyToStartContainers: true, v1.PodInitialized: true, v1.ContainersReady: true,
		v1.PodReady: true, v1.PodScheduled: true, v1.PodResizePending: true, v1.PodResizeInProgress: true,
	}
	var out []v1.PodCondition
	for _, c := range prev.Conditions {
		if !owned[c.Type] {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// withConditions sets add on conds, replacing those of the same type; each
// keeps its previous transition time while its status is unchanged.
func withConditions(conds, add []v1.PodCondition, prev *v1.PodStatus, now time.Time) []v1.PodCondition {
	for _, c := range add {
		c.LastTransitionTime = transitionTime(prev, c.Type, c.Status, now)
		replaced := false
		for i := range conds {
			if conds[i].Type == c.Type {
				conds[i], replaced = c, true
			}
		}
		if !replaced {
			conds = append(conds, c)
		}
	}
	return conds
}

func findCondition(s *v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func transitionTime(prev *v1.PodStatus, t v1.PodConditionType, status v1.ConditionStatus, now time.Time) metav1.Time {
	if c := findCondition(prev, t); c != nil && c.Status == status {
		return c.LastTransitionTime
	}
	return metav1.NewTime(now.Truncate(time.Second))
}

// terminateUnknown gives every status that is not terminated the
// kubelet's terminated state for a container it could not find when the
// pod was terminated (status manager's TerminatePod).
func terminateUnknown(statuses []v1.ContainerStatus) {
	for i := range statuses {
		st := &statuses[i]
		if st.State.Terminated != nil {
			continue
		}
		st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated", ExitCode: 137}}
		st.Ready = false
	}
}

// stoppedPhase is the phase of a deleted pod whose containers all
// terminated: Succeeded if every app container exited 0, else Failed;
// a phase already terminal stays. Pure.
func stoppedPhase(phase v1.PodPhase, app []v1.ContainerStatus) v1.PodPhase {
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		return phase
	}
	for _, cs := range app {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}
