package cliview

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders for container states and statuses.

func running() v1.ContainerState {
	return v1.ContainerState{Running: &v1.ContainerStateRunning{}}
}

func waiting(reason string) v1.ContainerState {
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
}

func exited(code, signal int32, reason string) v1.ContainerState {
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Signal: signal, Reason: reason}}
}

func status(name string, state v1.ContainerState, ready bool, restarts int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: state, Ready: ready, RestartCount: restarts}
}

func started(cs v1.ContainerStatus) v1.ContainerStatus {
	t := true
	cs.Started = &t
	return cs
}

func cond(t v1.PodConditionType, s v1.ConditionStatus, reason string) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s, Reason: reason}
}

// podWith builds a pod whose spec lists the containers of the statuses
// (inits: init containers, "sidecar*" names get restartPolicy Always).
func podWith(phase v1.PodPhase, inits, apps []v1.ContainerStatus, conds ...v1.PodCondition) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	p := &v1.Pod{Status: v1.PodStatus{Phase: phase, InitContainerStatuses: inits, ContainerStatuses: apps, Conditions: conds}}
	for _, cs := range inits {
		c := v1.Container{Name: cs.Name}
		if len(cs.Name) >= 7 && cs.Name[:7] == "sidecar" {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	for _, cs := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: cs.Name})
	}
	return p
}

func TestPodStatusReason(t *testing.T) {
	now := metav1.NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	withReason := func(p *v1.Pod, reason string) *v1.Pod { p.Status.Reason = reason; return p }
	deleted := func(p *v1.Pod) *v1.Pod { p.DeletionTimestamp = &now; return p }
	app := []v1.ContainerStatus{status("app", running(), true, 0)}
	ready := cond(v1.PodReady, v1.ConditionTrue, "")
	initialized := cond(v1.PodInitialized, v1.ConditionTrue, "")

	tests := []struct {
		name         string
		pod          *v1.Pod
		wantStatus   string
		wantReady    string
		wantRestarts int
	}{
		{"phase without statuses", podWith(v1.PodPending, nil, []v1.ContainerStatus{}), "Pending", "0/0", 0},
		{"status reason overrides phase", withReason(podWith(v1.PodFailed, nil, nil), "Evicted"), "Evicted", "0/0", 0},
		{"scheduling gated", podWith(v1.PodPending, nil, nil, cond(v1.PodScheduled, v1.ConditionFalse, "SchedulingGated")),
			"SchedulingGated", "0/0", 0},
		{"A.34 first of two init containers running", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("init-myservice", running(), false, 0), status("init-mydb", waiting("PodInitializing"), false, 0)},
			[]v1.ContainerStatus{status("myapp", waiting("PodInitializing"), false, 0)}),
			"Init:0/2", "0/1", 0},
		{"second init container running", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("a", exited(0, 0, "Completed"), false, 0), status("b", running(), false, 0)},
			[]v1.ContainerStatus{status("app", waiting("PodInitializing"), false, 0)}),
			"Init:1/2", "0/1", 0},
		{"init waiting PodInitializing counts as progress", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("a", waiting("PodInitializing"), false, 0)}, nil),
			"Init:0/1", "0/0", 0},
		{"init waiting with reason", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("a", waiting("CrashLoopBackOff"), false, 3)}, app),
			"Init:CrashLoopBackOff", "0/1", 3},
		{"init terminated with reason", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("a", exited(1, 0, "Error"), false, 0)}, app),
			"Init:Error", "0/1", 0},
		{"init terminated by signal", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("a", exited(137, 9, ""), false, 0)}, app),
			"Init:Signal:9", "0/1", 0},
		{"init terminated with exit code", podWith(v1.PodFailed,
			[]v1.ContainerStatus{status("a", exited(2, 0, ""), false, 0)}, app),
			"Init:ExitCode:2", "0/1", 0},
		{"started sidecar is skipped and counted ready", podWith(v1.PodPending,
			[]v1.ContainerStatus{started(status("sidecar", running(), true, 0)), status("b", running(), false, 0)},
			[]v1.ContainerStatus{status("app", waiting("PodInitializing"), false, 0)}),
			"Init:1/2", "1/2", 0},
		{"not yet started sidecar holds initialization", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("sidecar", running(), false, 0)}, app),
			"Init:0/1", "0/2", 0},
		{"initialized pod with sidecar", podWith(v1.PodRunning,
			[]v1.ContainerStatus{started(status("sidecar", running(), true, 2))}, app, initialized, ready),
			"Running", "2/2", 2},
		// kubectl keeps the init reason but counts app containers and
		// only sidecar restarts once the Initialized condition is true.
		{"Initialized condition: app containers counted", podWith(v1.PodRunning,
			[]v1.ContainerStatus{status("a", waiting("CrashLoopBackOff"), false, 4)}, app, initialized),
			"Init:CrashLoopBackOff", "1/1", 0},
		{"app waiting PodInitializing", podWith(v1.PodPending,
			[]v1.ContainerStatus{status("a", exited(0, 0, "Completed"), false, 0)},
			[]v1.ContainerStatus{status("app", waiting("PodInitializing"), false, 0)}),
			"PodInitializing", "0/1", 0},
		{"app creating", podWith(v1.PodPending, nil, []v1.ContainerStatus{status("app", waiting("ContainerCreating"), false, 0)}),
			"ContainerCreating", "0/1", 0},
		{"app crash loop", podWith(v1.PodRunning, nil, []v1.ContainerStatus{status("app", waiting("CrashLoopBackOff"), false, 5)}),
			"CrashLoopBackOff", "0/1", 5},
		{"app waiting without reason keeps phase", podWith(v1.PodPending, nil, []v1.ContainerStatus{status("app", waiting(""), false, 0)}),
			"Pending", "0/1", 0},
		{"completed", podWith(v1.PodSucceeded, nil, []v1.ContainerStatus{status("app", exited(0, 0, "Completed"), false, 0)}),
			"Completed", "0/1", 0},
		{"app exit code", podWith(v1.PodFailed, nil, []v1.ContainerStatus{status("app", exited(3, 0, ""), false, 0)}),
			"ExitCode:3", "0/1", 0},
		{"app signal", podWith(v1.PodFailed, nil, []v1.ContainerStatus{status("app", exited(143, 15, ""), false, 0)}),
			"Signal:15", "0/1", 0},
		{"first container's reason wins", podWith(v1.PodPending, nil, []v1.ContainerStatus{
			status("a", waiting("ImagePullBackOff"), false, 0), status("b", waiting("CrashLoopBackOff"), false, 2)}),
			"ImagePullBackOff", "0/2", 2},
		{"completed with a running container, ready", podWith(v1.PodRunning, nil, []v1.ContainerStatus{
			status("job", exited(0, 0, "Completed"), false, 0), status("srv", running(), true, 0)}, ready),
			"Running", "1/2", 0},
		{"completed with a running container, not ready", podWith(v1.PodRunning, nil, []v1.ContainerStatus{
			status("job", exited(0, 0, "Completed"), false, 0), status("srv", running(), true, 0)}),
			"NotReady", "1/2", 0},
		{"running but not ready", podWith(v1.PodRunning, nil, []v1.ContainerStatus{status("app", running(), false, 0)}),
			"Running", "0/1", 0},
		{"running", podWith(v1.PodRunning, nil, app, ready), "Running", "1/1", 0},
		{"terminating", deleted(podWith(v1.PodRunning, nil, app, ready)), "Terminating", "1/1", 0},
		{"deleted after success stays Completed", deleted(podWith(v1.PodSucceeded, nil,
			[]v1.ContainerStatus{status("app", exited(0, 0, "Completed"), false, 0)})), "Completed", "0/1", 0},
		{"deleted on a lost node", deleted(withReason(podWith(v1.PodRunning, nil, app), "NodeLost")), "Unknown", "1/1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodStatusReason(tt.pod); got != tt.wantStatus {
				t.Errorf("PodStatusReason = %q, want %q", got, tt.wantStatus)
			}
			s := summarize(tt.pod)
			if got := fmt.Sprintf("%d/%d", s.ready, s.total); got != tt.wantReady {
				t.Errorf("READY = %s, want %s", got, tt.wantReady)
			}
			if s.restarts != tt.wantRestarts {
				t.Errorf("RESTARTS = %d, want %d", s.restarts, tt.wantRestarts)
			}
		})
	}
}
