// Package nodestatus computes the Node object a node agent reports to an
// API server (checklist H.1, H.5-H.10): the initial Node of a
// registration (labels, taints), its status (addresses, capacity and
// allocatable, nodeInfo, images, conditions) and whether a status must be
// sent, and the node Lease. It makes no API calls and, but for
// SystemInfo (host files through an fs.FS), no I/O: callers gather the
// facts (machine, runtime, pressure) and own the API calls, so every rule
// here is table-tested.
//
// The rules are the kubelet's (pkg/kubelet/nodestatus/setters.go and
// kubelet_node_status.go, v1.34.4), with its reasons and messages, so
// that `kubectl describe node` reads the same for a skiff node.
package nodestatus

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Node event reasons the condition changes record, as the kubelet's.
const (
	EventNodeReady                 = "NodeReady"
	EventNodeNotReady              = "NodeNotReady"
	EventNodeHasSufficientMemory   = "NodeHasSufficientMemory"
	EventNodeHasInsufficientMemory = "NodeHasInsufficientMemory"
	EventNodeHasNoDiskPressure     = "NodeHasNoDiskPressure"
	EventNodeHasDiskPressure       = "NodeHasDiskPressure"
	EventNodeHasSufficientPID      = "NodeHasSufficientPID"
	EventNodeHasInsufficientPID    = "NodeHasInsufficientPID"
)

// Health is what the conditions report.
type Health struct {
	// NotReady are the reasons the node cannot run pods (runtime down,
	// network not ready, ...); none: Ready.
	NotReady []error
	// Pressure flags, as the eviction manager would set them.
	MemoryPressure, DiskPressure, PIDPressure bool
}

// pressure describes one pressure condition's two states.
type pressure struct {
	typ                  v1.NodeConditionType
	trueReason, trueMsg  string
	falseReason, falseMs string
	trueEvent, falseEvt  string
}

var pressures = []pressure{
	{v1.NodeMemoryPressure, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
		"KubeletHasSufficientMemory", "kubelet has sufficient memory available",
		EventNodeHasInsufficientMemory, EventNodeHasSufficientMemory},
	{v1.NodeDiskPressure, "KubeletHasDiskPressure", "kubelet has disk pressure",
		"KubeletHasNoDiskPressure", "kubelet has no disk pressure",
		EventNodeHasDiskPressure, EventNodeHasNoDiskPressure},
	{v1.NodePIDPressure, "KubeletHasInsufficientPID", "kubelet has insufficient PID available",
		"KubeletHasSufficientPID", "kubelet has sufficient PID available",
		EventNodeHasInsufficientPID, EventNodeHasSufficientPID},
}

// requiredCapacities are the resources without which the node is not
// Ready (the kubelet's ReadyCondition, with local storage isolation on).
var requiredCapacities = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage}

// SetConditions updates node's MemoryPressure, DiskPressure, PIDPressure
// and Ready conditions for h at now, in the kubelet's order (Ready last:
// kubernetes/kubernetes#16961). Every condition's heartbeat is now; its
// transition time changes only with its status. record (may be nil) gets
// each transition's event (type, reason), as the kubelet records them.
// Set the capacity first: a node missing cpu, memory, pods or
// ephemeral-storage capacity is not Ready. Not safe for concurrent use of
// node.
func SetConditions(node *v1.Node, h Health, now time.Time, record func(eventType, reason string)) {
	if record == nil {
		record = func(string, string) {}
	}
	t := metav1.NewTime(now)
	for _, p := range pressures {
		setPressure(node, p, pressed(h, p.typ), t, record)
	}
	setReady(node, h, t, record)
}

func pressed(h Health, typ v1.NodeConditionType) bool {
	switch typ {
	case v1.NodeMemoryPressure:
		return h.MemoryPressure
	case v1.NodeDiskPressure:
		return h.DiskPressure
	default:
		return h.PIDPressure
	}
}

// setPressure is the kubelet's MemoryPressureCondition (and its Disk and
// PID twins): a new condition starts Unknown, so its first status is a
// transition.
func setPressure(node *v1.Node, p pressure, on bool, now metav1.Time, record func(string, string)) {
	c := condition(node, p.typ)
	c.LastHeartbeatTime = now
	switch {
	case on && c.Status != v1.ConditionTrue:
		c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionTrue, p.trueReason, p.trueMsg, now
		record(v1.EventTypeNormal, p.trueEvent)
	case !on && c.Status != v1.ConditionFalse:
		c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionFalse, p.falseReason, p.falseMs, now
		record(v1.EventTypeNormal, p.falseEvt)
	}
}

// setReady is the kubelet's ReadyCondition: the whole condition is
// replaced, keeping the transition time while the status stays; the
// first one records no event.
func setReady(node *v1.Node, h Health, now metav1.Time, record func(string, string)) {
	next := v1.NodeCondition{
		Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now,
	}
	errs := append([]error(nil), h.NotReady...)
	var missing []string
	for _, r := range requiredCapacities {
		if _, ok := node.Status.Capacity[r]; !ok {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		next.Status, next.Reason, next.Message = v1.ConditionFalse, "KubeletNotReady", err.Error()
	}
	for i := range node.Status.Conditions {
		prev := &node.Status.Conditions[i]
		if prev.Type != v1.NodeReady {
			continue
		}
		next.LastTransitionTime = prev.LastTransitionTime
		if prev.Status != next.Status {
			next.LastTransitionTime = now
			if next.Status == v1.ConditionTrue {
				record(v1.EventTypeNormal, EventNodeReady)
			} else {
				record(v1.EventTypeNormal, EventNodeNotReady)
			}
		}
		*prev = next
		return
	}
	next.LastTransitionTime = now
	node.Status.Conditions = append(node.Status.Conditions, next)
}

// condition returns node's condition of typ, appending an Unknown one if
// there is none. The pointer is valid until the next append.
func condition(node *v1.Node, typ v1.NodeConditionType) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == typ {
			return &node.Status.Conditions[i]
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: typ, Status: v1.ConditionUnknown})
	return &node.Status.Conditions[len(node.Status.Conditions)-1]
}
