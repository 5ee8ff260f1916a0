package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestValidateAffinity: node affinity is accepted and checked as the
// node will match it; pod (anti-)affinity is accepted as is.
func TestValidateAffinity(t *testing.T) {
	required := func(terms ...v1.NodeSelectorTerm) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	const req = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
	for _, tc := range []struct {
		name     string
		affinity *v1.Affinity
		want     string // "" valid
	}{
		{"node label in", required(expr("disk", v1.NodeSelectorOpIn, "ssd")), ""},
		{"node name field (DaemonSet pods)", required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}), ""},
		{"pod anti-affinity", &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}}, ""},
		{"preferred", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 1, Preference: expr("disk", v1.NodeSelectorOpIn, "ssd")}}}}, ""},
		{"no term", required(), req + ".nodeSelectorTerms: Required value: must have at least one node selector term"},
		{"bad operator", required(expr("disk", "Bogus", "ssd")), req + ".nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: \"Bogus\""},
		{"In without values", required(expr("disk", v1.NodeSelectorOpIn)), req + ".nodeSelectorTerms[0].matchExpressions[0].values"},
		{"bad preferred", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 1, Preference: expr("disk", "Bogus")}}}}, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			pod.Spec.Affinity = tc.affinity
			errs := Validate(pod)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("Validate() = %v, want no error", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("Validate() = %v, want %q", errs, tc.want)
			}
		})
	}
}
