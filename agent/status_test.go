package agent

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/runtime"
)

func cond(s v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return "missing"
}

func TestComputePodStatus(t *testing.T) {
	now := t0.Add(time.Minute)
	tests := []struct {
		name       string
		pod        *v1.Pod
		st         *podState
		waiting    map[string]waitingState
		phase      v1.PodPhase
		initReason string // waiting reason of the first init container
		appReason  string // waiting reason of the first app container
		appState   string // running | terminated | waiting
		conds      map[v1.PodConditionType]v1.ConditionStatus
	}{
		{
			name: "no sandbox yet: Pending, ContainerCreating (A.5)", pod: testPod("Always", nil, "a"), st: state(nil),
			phase: v1.PodPending, appReason: "ContainerCreating", appState: "waiting",
			conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReadyToStartContainers: "False", v1.PodInitialized: "True", v1.PodScheduled: "True", v1.PodReady: "False"},
		},
		{
			name: "initializing: PodInitializing for app and pending inits (A.10, A.20)", pod: testPod("Always", []string{"i1", "i2"}, "a"),
			st:    state(sandboxReady(0), running("i1", 0)),
			phase: v1.PodPending, appReason: "PodInitializing", appState: "waiting",
			conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReadyToStartContainers: "True", v1.PodInitialized: "False", v1.ContainersReady: "False"},
		},
		{
			name: "running: Ready (A.17)", pod: testPod("Always", []string{"i1"}, "a"),
			st:    state(sandboxReady(0), exited("i1", 0, 0, t0), running("a", 0)),
			phase: v1.PodRunning, appState: "running",
			conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodInitialized: "True", v1.ContainersReady: "True", v1.PodReady: "True", v1.PodReadyToStartContainers: "True"},
		},
		{
			name: "all exited 0 under Never: Succeeded", pod: testPod("Never", nil, "a"),
			st:    state(sandboxReady(0), exited("a", 0, 0, t0)),
			phase: v1.PodSucceeded, appState: "terminated",
			conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: "False", v1.ContainersReady: "False"},
		},
		{
			name: "an app exited 1 under Never: Failed", pod: testPod("Never", nil, "a", "b"),
			st:    state(sandboxReady(0), exited("a", 0, 0, t0), exited("b", 0, 1, t0)),
			phase: v1.PodFailed, appState: "terminated",
		},
		{
			name: "init failed under Never: Failed (A.26)", pod: testPod("Never", []string{"i1"}, "a"),
			st:    state(sandboxReady(0), exited("i1", 0, 1, t0)),
			phase: v1.PodFailed, appReason: "PodInitializing", appState: "waiting",
		},
		{
			name: "crash loop keeps phase Running", pod: testPod("Always", nil, "a"),
			st:      state(sandboxReady(0), exited("a", 1, 1, t0), exited("a", 0, 1, t0)),
			waiting: map[string]waitingState{"a": {Reason: "CrashLoopBackOff", Message: "back-off 10s"}},
			phase:   v1.PodRunning, appReason: "CrashLoopBackOff", appState: "waiting",
		},
		{
			name: "image never pulled (A.11)", pod: testPod("Always", nil, "a"),
			st:      state(sandboxReady(0)),
			waiting: map[string]waitingState{"a": {Reason: "ErrImageNeverPull"}},
			phase:   v1.PodPending, appReason: "ErrImageNeverPull", appState: "waiting",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := computePodStatus(statusInput{Pod: tt.pod, State: tt.st, Waiting: tt.waiting, HostIPs: []string{"192.0.2.1"}, Now: now})
			if s.Phase != tt.phase {
				t.Errorf("phase %s, want %s", s.Phase, tt.phase)
			}
			app := s.ContainerStatuses[0]
			switch tt.appState {
			case "running":
				if app.State.Running == nil || !app.Ready {
					t.Errorf("app state %+v ready=%v, want running and ready", app.State, app.Ready)
				}
			case "terminated":
				if app.State.Terminated == nil {
					t.Errorf("app state %+v, want terminated", app.State)
				}
			case "waiting":
				if app.State.Waiting == nil || app.State.Waiting.Reason != tt.appReason {
					t.Errorf("app state %+v, want waiting %s", app.State, tt.appReason)
				}
			}
			for ct, want := range tt.conds {
				if got := cond(s, ct); got != want {
					t.Errorf("condition %s = %s, want %s", ct, got, want)
				}
			}
			if s.HostIP != "192.0.2.1" {
				t.Errorf("hostIP %q", s.HostIP)
			}
		})
	}
}

func TestStatusDetails(t *testing.T) {
	pod := testPod("Always", nil, "a")
	st := state(sandboxReady(0), running("a", 1), exited("a", 0, 2, t0))
	s := computePodStatus(statusInput{Pod: pod, State: st, Now: t0, RuntimeName: "cri-o"})
	cs := s.ContainerStatuses[0]
	if cs.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1", cs.RestartCount)
	}
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 2 || lt.Reason != "Error" {
		t.Errorf("lastState %+v, want terminated exit 2 reason Error", cs.LastTerminationState)
	}
	if s.PodIP != "10.88.0.5" || len(s.PodIPs) != 1 {
		t.Errorf("podIP %q %v", s.PodIP, s.PodIPs)
	}
	if cs.ContainerID != "cri-o://a-1" || cs.LastTerminationState.Terminated.ContainerID != "cri-o://a-0" {
		t.Errorf("containerID %q, last %q: want the runtime's name as the scheme", cs.ContainerID, cs.LastTerminationState.Terminated.ContainerID)
	}
}

func TestContainerIDFromStatusAnyScheme(t *testing.T) {
	for in, want := range map[string]string{"containerd://abc": "abc", "cri-o://def": "def", "fake://x": "x", "bare": "bare"} {
		if got := containerIDFromStatus(in); got != want {
			t.Errorf("containerIDFromStatus(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostNetworkPodIPIsHostIP(t *testing.T) {
	pod := testPod("Always", nil, "a")
	pod.Spec.HostNetwork = true
	s := computePodStatus(statusInput{Pod: pod, State: state(sandboxReady(0), running("a", 0)), HostIPs: []string{"192.0.2.1"}, Now: t0})
	if s.PodIP != "192.0.2.1" {
		t.Errorf("podIP %q, want the host IP", s.PodIP)
	}
}

// TestReadinessGates_A21_A22: containers ready but a gate missing ->
// ContainersReady True, Ready False; a True gate condition makes it Ready.
func TestReadinessGates_A21_A22(t *testing.T) {
	pod := testPod("Always", nil, "a")
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/feature"}}
	st := state(sandboxReady(0), running("a", 0))
	s := computePodStatus(statusInput{Pod: pod, State: st, Now: t0})
	if cond(s, v1.ContainersReady) != "True" || cond(s, v1.PodReady) != "False" {
		t.Fatalf("ContainersReady=%s Ready=%s, want True False", cond(s, v1.ContainersReady), cond(s, v1.PodReady))
	}
	s.Conditions = append(s.Conditions, v1.PodCondition{Type: "example.com/feature", Status: v1.ConditionTrue})
	s2 := computePodStatus(statusInput{Pod: pod, State: st, Previous: &s, Now: t0})
	if cond(s2, v1.PodReady) != "True" || cond(s2, "example.com/feature") != "True" {
		t.Errorf("Ready=%s gate=%s, want True True (A.23 keeps foreign conditions)", cond(s2, v1.PodReady), cond(s2, "example.com/feature"))
	}
}

func TestTransitionTimeKeptWhileStatusHolds_A16(t *testing.T) {
	pod := testPod("Always", nil, "a")
	st := state(sandboxReady(0), running("a", 0))
	s1 := computePodStatus(statusInput{Pod: pod, State: st, Now: t0})
	s2 := computePodStatus(statusInput{Pod: pod, State: st, Previous: &s1, Now: t0.Add(time.Hour)})
	for i := range s2.Conditions {
		if !s2.Conditions[i].LastTransitionTime.Equal(&s1.Conditions[i].LastTransitionTime) {
			t.Errorf("condition %s transition time moved", s2.Conditions[i].Type)
		}
	}
}

func TestQOSClass(t *testing.T) {
	q := resource.MustParse
	mk := func(req, lim v1.ResourceList) *v1.Pod {
		p := testPod("Always", nil, "a")
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: req, Limits: lim}
		return p
	}
	tests := []struct {
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{mk(nil, nil), v1.PodQOSBestEffort},
		{mk(v1.ResourceList{"cpu": q("100m")}, nil), v1.PodQOSBurstable},
		{mk(nil, v1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}), v1.PodQOSGuaranteed},
		{mk(v1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}, v1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}), v1.PodQOSGuaranteed},
		{mk(v1.ResourceList{"cpu": q("500m"), "memory": q("1Gi")}, v1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}), v1.PodQOSBurstable},
	}
	for i, tt := range tests {
		if got := qosClass(tt.pod); got != tt.want {
			t.Errorf("case %d: %s, want %s", i, got, tt.want)
		}
	}
}

// TestVolumeMountsAndUserStatus: every container status lists its
// volumeMounts as the kubelet does (read-only ones with their resolved
// recursiveReadOnly), from before the container exists; a running one has
// the user the runtime reports.
func TestVolumeMountsAndUserStatus(t *testing.T) {
	ifPossible, enabled := v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled
	pod := testPod("Always", []string{"init"}, "a")
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "rw", MountPath: "/rw"},
		{Name: "ro", MountPath: "/ro", ReadOnly: true},
		{Name: "maybe", MountPath: "/maybe", ReadOnly: true, RecursiveReadOnly: &ifPossible},
		{Name: "must", MountPath: "/must", ReadOnly: true, RecursiveReadOnly: &enabled},
	}
	a := running("a", 0)
	a.User = &runtime.ContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}
	mode := func(vm v1.VolumeMountStatus) string {
		if vm.RecursiveReadOnly == nil {
			return vm.Name + ":-"
		}
		return vm.Name + ":" + string(*vm.RecursiveReadOnly)
	}
	for _, tc := range []struct {
		name      string
		supported bool
		want      string
	}{
		{"containerd 2.4", true, "[rw:- ro:Disabled maybe:Enabled must:Enabled]"},
		// "must" fails the container (CreateContainerConfigError); its
		// status says Disabled.
		{"containerd 1.6", false, "[rw:- ro:Disabled maybe:Disabled must:Disabled]"},
	} {
		s := computePodStatus(statusInput{Pod: pod, State: state(sandboxReady(0), exited("init", 0, 0, t0), a), Now: t0, RecursiveReadOnly: tc.supported})
		cs := s.ContainerStatuses[0]
		var got []string
		for _, vm := range cs.VolumeMounts {
			got = append(got, mode(vm))
		}
		if fmt.Sprint(got) != tc.want || cs.VolumeMounts[1].MountPath != "/ro" || !cs.VolumeMounts[1].ReadOnly {
			t.Errorf("%s: volumeMounts %v (%+v), want %s", tc.name, got, cs.VolumeMounts, tc.want)
		}
		if u := cs.User; u == nil || u.Linux.UID != 1000 || u.Linux.GID != 3000 || fmt.Sprint(u.Linux.SupplementalGroups) != "[3000 4000]" {
			t.Errorf("%s: user %+v", tc.name, cs.User)
		}
		if init := s.InitContainerStatuses[0]; init.VolumeMounts != nil || init.User != nil {
			t.Errorf("%s: init container without mounts or a reported user: %+v %+v", tc.name, init.VolumeMounts, init.User)
		}
	}
	waiting := computePodStatus(statusInput{Pod: pod, State: state(sandboxReady(0)), Now: t0})
	if cs := waiting.ContainerStatuses[0]; len(cs.VolumeMounts) != 4 || cs.User != nil {
		t.Errorf("waiting container: volumeMounts %+v user %+v, want the mounts and no user", cs.VolumeMounts, cs.User)
	}
}

// TestSandboxConditionAndObservedGeneration: PodReadyToStartContainers is
// False with the kubelet's 1.37 reason and message while no ready sandbox
// exists; the status and each kubelet condition observe the pod's
// generation, never going back below an earlier status's.
func TestSandboxConditionAndObservedGeneration(t *testing.T) {
	pod := testPod("Always", nil, "a")
	pod.Generation = 3
	stopped := sandboxReady(0)
	stopped.State = runtime.SandboxNotReady
	for _, tc := range []struct {
		name    string
		st      *podState
		wantMsg string
	}{
		{"no sandbox", state(nil), "no pod sandbox exists"},
		{"stopped sandbox", state(stopped), "pod sandbox is not ready"},
		{"ready sandbox", state(sandboxReady(0), running("a", 0)), ""},
	} {
		s := computePodStatus(statusInput{Pod: pod, State: tc.st, Now: t0})
		for _, c := range s.Conditions {
			if c.ObservedGeneration != 3 {
				t.Errorf("%s: condition %s observedGeneration %d, want 3", tc.name, c.Type, c.ObservedGeneration)
			}
			if c.Type != v1.PodReadyToStartContainers {
				continue
			}
			if tc.wantMsg == "" && (c.Status != v1.ConditionTrue || c.Reason != "") {
				t.Errorf("%s: %+v, want True without a reason", tc.name, c)
			}
			if tc.wantMsg != "" && (c.Status != v1.ConditionFalse || c.Reason != "PodSandboxNotReady" || c.Message != tc.wantMsg) {
				t.Errorf("%s: %+v, want False PodSandboxNotReady %q", tc.name, c, tc.wantMsg)
			}
		}
		if s.ObservedGeneration != 3 {
			t.Errorf("%s: observedGeneration %d, want 3", tc.name, s.ObservedGeneration)
		}
	}
	prev := v1.PodStatus{ObservedGeneration: 5}
	if s := computePodStatus(statusInput{Pod: pod, State: state(nil), Previous: &prev, Now: t0}); s.ObservedGeneration != 5 {
		t.Errorf("observedGeneration %d after a status that observed 5, want 5", s.ObservedGeneration)
	}
}

// TestStartedSetOnEveryStatus: started is false, not unset, for init and
// app containers not created yet, as the kubelet's prober manager sets it
// on every status (upstream's e2e dereferences it).
func TestStartedSetOnEveryStatus(t *testing.T) {
	pod := testPod("Always", []string{"side"}, "main")
	pod.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	s := computePodStatus(statusInput{Pod: pod, State: state(sandboxReady(0), running("side", 0)), Now: t0,
		Started: func(string) bool { return false }})
	for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
		if cs.Started == nil || *cs.Started {
			t.Errorf("%s: started %v, want false", cs.Name, cs.Started)
		}
	}
}

// TestStoppedPhase: a deleted pod whose containers stopped ends Succeeded
// when every app container exited 0, Failed when one did not, and keeps
// its phase while one has not exited (the kubelet's podIsTerminal).
func TestStoppedPhase(t *testing.T) {
	term := func(code int32) v1.ContainerStatus {
		return v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	waiting := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	for _, tc := range []struct {
		name string
		app  []v1.ContainerStatus
		want v1.PodPhase
	}{
		{"all 0", []v1.ContainerStatus{term(0), term(0)}, v1.PodSucceeded},
		{"one 137", []v1.ContainerStatus{term(0), term(137)}, v1.PodFailed},
		{"one never ran", []v1.ContainerStatus{term(0), waiting}, v1.PodFailed},
	} {
		terminateUnknown(tc.app)
		if got := stoppedPhase(v1.PodRunning, tc.app); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	kept := []v1.ContainerStatus{term(3)}
	terminateUnknown(kept)
	if t3 := kept[0].State.Terminated; t3.ExitCode != 3 || t3.Reason != "" {
		t.Errorf("a terminated container was overwritten: %+v", t3)
	}
	unknown := []v1.ContainerStatus{waiting}
	terminateUnknown(unknown)
	if t2 := unknown[0].State.Terminated; t2 == nil || t2.Reason != "ContainerStatusUnknown" || t2.ExitCode != 137 {
		t.Errorf("never-run container: %+v, want ContainerStatusUnknown 137", unknown[0].State)
	}
}

// TestAgentKeepsFinalStatus: once a deleted pod's worker finished, its
// last published status (containers terminated, phase terminal) stays
// available to the API source for the report before the deletion.
func TestAgentKeepsFinalStatus(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := testPod("Always", nil, "a")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.src.ch <- []*v1.Pod{}
	h.eventually("final status kept", func() bool {
		p, ok := h.agent.FinalPod("uid1")
		return ok && h.agent.Terminated("uid1") && p.Status.Phase != v1.PodRunning &&
			p.Status.ContainerStatuses[0].State.Terminated != nil
	})
}
