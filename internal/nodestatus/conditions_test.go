package nodestatus

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// withCapacity is a node with every capacity the Ready condition needs.
func withCapacity() *v1.Node {
	n := &v1.Node{}
	n.Status.Capacity = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
	}
	return n
}

// summary renders conditions as "Type=Status Reason (Message) transition heartbeat".
func summary(n *v1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s (%s) t=%s h=%s", c.Type, c.Status, c.Reason, c.Message,
			c.LastTransitionTime.Sub(t0), c.LastHeartbeatTime.Sub(t0)))
	}
	return out
}

type recorded []string

func (r *recorded) record(typ, reason string) { *r = append(*r, typ+" "+reason) }

// TestConditionsFirstReport_H6: a healthy node's first status has the
// kubelet's four conditions with its reasons and messages, Ready last,
// each transition and heartbeat now; the pressure conditions record their
// events (they start Unknown), the first Ready none.
func TestConditionsFirstReport_H6(t *testing.T) {
	n := withCapacity()
	var ev recorded
	SetConditions(n, Health{}, t0, ev.record)
	want := []string{
		"MemoryPressure=False KubeletHasSufficientMemory (kubelet has sufficient memory available) t=0s h=0s",
		"DiskPressure=False KubeletHasNoDiskPressure (kubelet has no disk pressure) t=0s h=0s",
		"PIDPressure=False KubeletHasSufficientPID (kubelet has sufficient PID available) t=0s h=0s",
		"Ready=True KubeletReady (kubelet is posting ready status) t=0s h=0s",
	}
	if got := summary(n); !slices.Equal(got, want) {
		t.Errorf("conditions\n%q\nwant\n%q", got, want)
	}
	wantEv := recorded{"Normal NodeHasSufficientMemory", "Normal NodeHasNoDiskPressure", "Normal NodeHasSufficientPID"}
	if !slices.Equal(ev, wantEv) {
		t.Errorf("events %q, want %q", ev, wantEv)
	}
}

// TestConditionsTransitions_H6: later reports move every heartbeat; a
// transition time and an event only where the status changed.
func TestConditionsTransitions_H6(t *testing.T) {
	tests := []struct {
		name   string
		health Health
		want   []string
		events recorded
	}{
		{"unchanged", Health{}, []string{
			"MemoryPressure=False KubeletHasSufficientMemory (kubelet has sufficient memory available) t=0s h=10s",
			"DiskPressure=False KubeletHasNoDiskPressure (kubelet has no disk pressure) t=0s h=10s",
			"PIDPressure=False KubeletHasSufficientPID (kubelet has sufficient PID available) t=0s h=10s",
			"Ready=True KubeletReady (kubelet is posting ready status) t=0s h=10s",
		}, nil},
		{"pressure", Health{MemoryPressure: true, DiskPressure: true, PIDPressure: true}, []string{
			"MemoryPressure=True KubeletHasInsufficientMemory (kubelet has insufficient memory available) t=10s h=10s",
			"DiskPressure=True KubeletHasDiskPressure (kubelet has disk pressure) t=10s h=10s",
			"PIDPressure=True KubeletHasInsufficientPID (kubelet has insufficient PID available) t=10s h=10s",
			"Ready=True KubeletReady (kubelet is posting ready status) t=0s h=10s",
		}, recorded{"Normal NodeHasInsufficientMemory", "Normal NodeHasDiskPressure", "Normal NodeHasInsufficientPID"}},
		{"not ready, errors aggregated", Health{NotReady: []error{errors.New("container runtime is down"), nil, errors.New("network not ready")}}, []string{
			"MemoryPressure=False KubeletHasSufficientMemory (kubelet has sufficient memory available) t=0s h=10s",
			"DiskPressure=False KubeletHasNoDiskPressure (kubelet has no disk pressure) t=0s h=10s",
			"PIDPressure=False KubeletHasSufficientPID (kubelet has sufficient PID available) t=0s h=10s",
			"Ready=False KubeletNotReady ([container runtime is down, network not ready]) t=10s h=10s",
		}, recorded{"Normal NodeNotReady"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := withCapacity()
			SetConditions(n, Health{}, t0, nil)
			var ev recorded
			SetConditions(n, tc.health, t0.Add(10*time.Second), ev.record)
			if got := summary(n); !slices.Equal(got, tc.want) {
				t.Errorf("conditions\n%q\nwant\n%q", got, tc.want)
			}
			if !slices.Equal(ev, tc.events) {
				t.Errorf("events %q, want %q", ev, tc.events)
			}
		})
	}
}

// TestReadyAgainRecordsNodeReady_H6: back to Ready is a transition with
// the NodeReady event.
func TestReadyAgainRecordsNodeReady_H6(t *testing.T) {
	n := withCapacity()
	SetConditions(n, Health{NotReady: []error{errors.New("down")}}, t0, nil)
	var ev recorded
	SetConditions(n, Health{}, t0.Add(time.Minute), ev.record)
	ready := n.Status.Conditions[len(n.Status.Conditions)-1]
	if ready.Status != v1.ConditionTrue || ready.LastTransitionTime.Sub(t0) != time.Minute {
		t.Errorf("Ready %+v, want True since t0+1m", ready)
	}
	if !slices.Equal(ev, recorded{"Normal NodeReady"}) {
		t.Errorf("events %q", ev)
	}
}

// TestMissingCapacityNotReady_H7: without cpu, memory, pods or
// ephemeral-storage capacity the node is not Ready, in the kubelet's words.
func TestMissingCapacityNotReady_H7(t *testing.T) {
	n := withCapacity()
	delete(n.Status.Capacity, v1.ResourcePods)
	delete(n.Status.Capacity, v1.ResourceEphemeralStorage)
	SetConditions(n, Health{}, t0, nil)
	ready := n.Status.Conditions[len(n.Status.Conditions)-1]
	if ready.Status != v1.ConditionFalse || ready.Message != "missing node capacity for resources: pods, ephemeral-storage" {
		t.Errorf("Ready %s %q", ready.Status, ready.Message)
	}
}
