package apisource

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(t v1.PodConditionType, s v1.ConditionStatus, at time.Time) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)}
}

// TestMergedStatus_A23: the agent's conditions replace the kubelet-owned
// ones, keeping the API's transition time where the status is the same
// (a restarted agent flips nothing); others' conditions (a readiness
// gate) and the scheduler's PodScheduled stay.
func TestMergedStatus_A23(t *testing.T) {
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	api := &v1.PodStatus{
		Phase:             v1.PodRunning,
		NominatedNodeName: "n",
		Conditions: []v1.PodCondition{
			cond(v1.PodScheduled, v1.ConditionTrue, t0),
			cond(v1.PodReady, v1.ConditionTrue, t0),
			cond(v1.ContainersReady, v1.ConditionFalse, t0),
			cond("example.com/gate", v1.ConditionTrue, t0),
		},
	}
	ours := v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			cond(v1.PodScheduled, v1.ConditionTrue, t1),
			cond(v1.PodReady, v1.ConditionTrue, t1),
			cond(v1.ContainersReady, v1.ConditionTrue, t1),
		},
	}
	got := mergedStatus(api, ours, nil, t1)
	want := map[v1.PodConditionType]time.Time{
		v1.PodScheduled: t0, v1.PodReady: t0, v1.ContainersReady: t1, "example.com/gate": t0,
	}
	if len(got.Conditions) != len(want) {
		t.Fatalf("conditions %+v, want %d", got.Conditions, len(want))
	}
	for _, c := range got.Conditions {
		if w, ok := want[c.Type]; !ok || !c.LastTransitionTime.Time.Equal(w) {
			t.Errorf("condition %s transition %v, want %v", c.Type, c.LastTransitionTime, w)
		}
	}
	if got.NominatedNodeName != "n" {
		t.Errorf("nominatedNodeName %q lost", got.NominatedNodeName)
	}
	if !sameStatus(&got, &got) || sameStatus(&got, api) {
		t.Error("sameStatus: want equal to itself and different from the API's")
	}
	reordered := got.DeepCopy()
	reordered.Conditions[0], reordered.Conditions[1] = reordered.Conditions[1], reordered.Conditions[0]
	if !sameStatus(&got, reordered) {
		t.Error("sameStatus depends on the conditions' order")
	}
}

// TestStatusPatch_A23: the patch carries the UID precondition, every owned
// field (null when empty, so it is removed), the pod IPs replaced whole,
// and the conditions to merge by type.
func TestStatusPatch_A23(t *testing.T) {
	st := v1.PodStatus{
		Phase: v1.PodRunning, PodIP: "10.0.0.1", PodIPs: []v1.PodIP{{IP: "10.0.0.1"}},
		Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue, time.Unix(1000, 0))},
	}
	b, err := statusPatch("u1", &v1.PodStatus{}, st)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata map[string]any `json:"metadata"`
		Status   map[string]any `json:"status"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata["uid"] != "u1" {
		t.Errorf("metadata %v, want the uid precondition", got.Metadata)
	}
	for _, f := range []string{"message", "reason", "hostIP", "startTime", "containerStatuses"} {
		if v, ok := got.Status[f]; !ok || v != nil {
			t.Errorf("status.%s = %v (present %t), want null", f, v, ok)
		}
	}
	if !strings.Contains(string(b), `"podIPs":[{"ip":"10.0.0.1"},{"$patch":"replace"}]`) {
		t.Errorf("podIPs not replaced whole: %s", b)
	}
	if c, _ := got.Status["conditions"].([]any); len(c) != 1 {
		t.Errorf("conditions %v, want the one", got.Status["conditions"])
	}
	if got.Status["phase"] != "Running" {
		t.Errorf("phase %v", got.Status["phase"])
	}
}

// TestMergedStatusReadinessGates_A21_A22: with a readiness gate, Ready
// follows the gate's condition as others set it in the API server, with
// the kubelet's reason and messages.
func TestMergedStatusReadinessGates_A21_A22(t *testing.T) {
	t0, now := time.Unix(1000, 0), time.Unix(5000, 0)
	gates := []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	ours := v1.PodStatus{Conditions: []v1.PodCondition{
		cond(v1.ContainersReady, v1.ConditionTrue, t0),
		{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady", LastTransitionTime: metav1.NewTime(t0)},
	}}
	tests := []struct {
		name       string
		gate       *v1.PodCondition
		want       v1.ConditionStatus
		msg        string
		transition time.Time
	}{
		{"missing", nil, v1.ConditionFalse, `corresponding condition of pod readiness gate "example.com/lb" does not exist.`, t0},
		{"false", &v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionFalse}, v1.ConditionFalse, `the status of pod readiness gate "example.com/lb" is not "True", but False`, t0},
		{"true", &v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionTrue}, v1.ConditionTrue, "", now},
	}
	for _, tt := range tests {
		api := &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)}}}
		if tt.gate != nil {
			api.Conditions = append(api.Conditions, *tt.gate)
		}
		got := mergedStatus(api, ours, gates, now)
		r := findCondition(got.Conditions, v1.PodReady)
		if r.Status != tt.want || r.Message != tt.msg || !r.LastTransitionTime.Time.Equal(tt.transition) {
			t.Errorf("%s: Ready %s %q at %v, want %s %q at %v", tt.name, r.Status, r.Message, r.LastTransitionTime, tt.want, tt.msg, tt.transition)
		}
		if tt.gate != nil && findCondition(got.Conditions, "example.com/lb") == nil {
			t.Errorf("%s: the gate's condition was dropped", tt.name)
		}
	}
	if r := findCondition(ours.Conditions, v1.PodReady); r.Status != v1.ConditionFalse {
		t.Error("mergedStatus changed its input")
	}
}

// TestObservedGenerationPatched: the agent's observedGeneration is sent,
// never below the API's (the kubelet's status manager).
func TestObservedGenerationPatched(t *testing.T) {
	for _, tc := range []struct{ api, ours, want int64 }{{0, 2, 2}, {3, 2, 3}, {2, 4, 4}} {
		merged := mergedStatus(&v1.PodStatus{ObservedGeneration: tc.api}, v1.PodStatus{ObservedGeneration: tc.ours}, nil, time.Unix(0, 0))
		if merged.ObservedGeneration != tc.want {
			t.Errorf("API %d, agent %d: merged %d, want %d", tc.api, tc.ours, merged.ObservedGeneration, tc.want)
		}
		b, err := statusPatch("u1", &v1.PodStatus{}, merged)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"observedGeneration":` + strconv.FormatInt(tc.want, 10); !strings.Contains(string(b), want) {
			t.Errorf("patch %s lacks %s", b, want)
		}
	}
}

// TestResizeConditionsCleared: a resize condition the agent no longer
// reports is dropped from the merged status and deleted by the patch,
// where other kubelet conditions the agent lacks stay; one it reports is
// sent.
func TestResizeConditionsCleared(t *testing.T) {
	at := time.Unix(1000, 0)
	api := &v1.PodStatus{Conditions: []v1.PodCondition{
		cond(v1.PodResizeInProgress, v1.ConditionTrue, at),
		cond(v1.PodResizePending, v1.ConditionTrue, at),
		cond(v1.PodScheduled, v1.ConditionTrue, at),
	}}
	ours := v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.PodResizePending, v1.ConditionTrue, at)}}
	merged := mergedStatus(api, ours, nil, at)
	if findCondition(merged.Conditions, v1.PodResizeInProgress) != nil {
		t.Errorf("merged status keeps PodResizeInProgress: %+v", merged.Conditions)
	}
	for _, typ := range []v1.PodConditionType{v1.PodResizePending, v1.PodScheduled} {
		if findCondition(merged.Conditions, typ) == nil {
			t.Errorf("merged status lacks %s: %+v", typ, merged.Conditions)
		}
	}
	b, err := statusPatch("u1", api, merged)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"$patch":"delete","type":"PodResizeInProgress"}`; !strings.Contains(string(b), want) {
		t.Errorf("patch %s lacks %s", b, want)
	}
	if strings.Contains(string(b), `"$patch":"delete","type":"PodResizePending"`) {
		t.Errorf("patch %s deletes the PodResizePending the agent reports", b)
	}
}
