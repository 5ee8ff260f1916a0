package apisource

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kubeletConditions are the pod conditions the node agent owns (the
// kubelet's PodConditionsByKubelet); others (readiness gates, a
// DisruptionTarget) belong to whoever set them and are kept.
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled: true, v1.PodReady: true, v1.PodInitialized: true,
	v1.ContainersReady: true, v1.PodReadyToStartContainers: true,
}

// resizeConditions are kubelet conditions that come and go: one the
// agent's status lacks is deleted from the API's.
var resizeConditions = map[v1.PodConditionType]bool{v1.PodResizePending: true, v1.PodResizeInProgress: true}

// ownedFields are the status fields (JSON names) the agent writes; one the
// agent's status leaves empty is deleted from the API's (null in the
// patch). Lists are replaced whole.
var ownedFields = []string{
	"phase", "message", "reason", "hostIP", "hostIPs", "podIP", "podIPs", "startTime", "qosClass", "observedGeneration",
	"initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses",
}

// replaceLists are owned lists whose strategic merge strategy is "merge"
// by key: the patch replaces them whole instead ($patch: replace).
var replaceLists = map[string]bool{"hostIPs": true, "podIPs": true}

// mergedStatus is the status the API's pod has once the agent's status is
// applied, the kubelet's way (status manager's mergePodStatus): the
// agent's fields and conditions, the API's other conditions, and the
// API's transition time of every condition whose status did not change
// (a restarted agent flips nothing, KEP-4781), and observedGeneration at
// least the API's. PodScheduled stays the
// scheduler's when the API has it. With readiness gates, Ready is decided
// on the gates' conditions as the API has them (set by others, unseen by
// the agent; A.21, A.22), a change stamped now. Pure.
func mergedStatus(api *v1.PodStatus, ours v1.PodStatus, gates []v1.PodReadinessGate, now time.Time) v1.PodStatus {
	ours = *ours.DeepCopy()
	applyGates(&ours, api, gates, now)
	out := ours
	// The kubelet's status manager never lowers observedGeneration.
	out.ObservedGeneration = max(out.ObservedGeneration, api.ObservedGeneration)
	out.NominatedNodeName = api.NominatedNodeName
	out.Resize, out.ResourceClaimStatuses = api.Resize, api.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = api.ExtendedResourceClaimStatus
	var conds []v1.PodCondition
	for _, c := range ours.Conditions {
		prev := findCondition(api.Conditions, c.Type)
		switch {
		case prev == nil:
		case c.Type == v1.PodScheduled:
			c = *prev.DeepCopy()
		case prev.Status == c.Status:
			c.LastTransitionTime = prev.LastTransitionTime
		}
		conds = append(conds, c)
	}
	for _, c := range api.Conditions {
		if resizeConditions[c.Type] {
			continue
		}
		if !kubeletConditions[c.Type] || findCondition(ours.Conditions, c.Type) == nil {
			conds = append(conds, *c.DeepCopy())
		}
	}
	out.Conditions = conds
	return out
}

// applyGates sets st's Ready condition as the kubelet does with readiness
// gates: True when ContainersReady is and every gate's condition in api
// is True, else False with the first unmet gate in the message.
func applyGates(st *v1.PodStatus, api *v1.PodStatus, gates []v1.PodReadinessGate, now time.Time) {
	ready, cr := findCondition(st.Conditions, v1.PodReady), findCondition(st.Conditions, v1.ContainersReady)
	if len(gates) == 0 || ready == nil || cr == nil || cr.Status != v1.ConditionTrue {
		return
	}
	want, reason, msg := v1.ConditionTrue, "", ""
	for _, g := range gates {
		c := findCondition(api.Conditions, g.ConditionType)
		switch {
		case c == nil:
			msg = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
		case c.Status != v1.ConditionTrue:
			msg = fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status)
		default:
			continue
		}
		want, reason = v1.ConditionFalse, "ReadinessGatesNotReady"
		break
	}
	if ready.Status != want {
		ready.LastTransitionTime = metav1.NewTime(now)
	}
	ready.Status, ready.Reason, ready.Message = want, reason, msg
}

func findCondition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// statusPatch is the strategic merge patch of pods/status that turns the
// API's status (api) of the pod uid into merged: the agent's fields (null
// where empty), its conditions (merged by type, so the others' stay; a
// resize condition merged lacks is deleted), and metadata.uid as a
// precondition (a pod re-created under the same name is never patched
// with the old one's status). Pure.
func statusPatch(uid types.UID, api *v1.PodStatus, merged v1.PodStatus) ([]byte, error) {
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	st := map[string]any{}
	for _, f := range ownedFields {
		v, ok := m[f]
		if !ok {
			st[f] = nil
			continue
		}
		if l, isList := v.([]any); isList && replaceLists[f] {
			v = append(l, map[string]any{"$patch": "replace"})
		}
		st[f] = v
	}
	var conds []any
	if c, ok := m["conditions"].([]any); ok {
		conds = c
	}
	for _, c := range api.Conditions {
		if resizeConditions[c.Type] && findCondition(merged.Conditions, c.Type) == nil {
			conds = append(conds, map[string]any{"type": string(c.Type), "$patch": "delete"})
		}
	}
	st["conditions"] = conds
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": st})
}

// sameStatus reports whether two statuses read the same through the API
// (times at its precision of seconds, conditions in any order). Pure.
func sameStatus(a, b *v1.PodStatus) bool {
	x, err1 := json.Marshal(sortedConditions(a))
	y, err2 := json.Marshal(sortedConditions(b))
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func sortedConditions(s *v1.PodStatus) *v1.PodStatus {
	c := s.DeepCopy()
	sort.SliceStable(c.Conditions, func(i, j int) bool { return c.Conditions[i].Type < c.Conditions[j].Type })
	return c
}
