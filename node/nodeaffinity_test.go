package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestNodeAffinityAdmitter: pods are matched against the node the API
// server has, else the registered one, by spec.nodeSelector and required
// node affinity (labels and the metadata.name field, as a DaemonSet's
// pods), and rejected as the kubelet rejects them.
func TestNodeAffinityAdmitter(t *testing.T) {
	registered := registeredNode("n1", map[string]string{"disk": "ssd"})
	labelled := registered.DeepCopy()
	labelled.Labels["zone"] = "a" // kubectl label node n1 zone=a
	nameIs := func(name string) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}}}}}}}
	}
	for _, tc := range []struct {
		name     string
		current  *v1.Node
		selector map[string]string
		affinity *v1.Affinity
		admit    bool
	}{
		{name: "no constraint", admit: true},
		{name: "default label", selector: map[string]string{v1.LabelHostname: "n1", v1.LabelOSStable: "linux"}, admit: true},
		{name: "--node-labels", selector: map[string]string{"disk": "ssd"}, admit: true},
		{name: "selector mismatch", selector: map[string]string{"disk": "hdd"}},
		{name: "label only on the API's node, not known", selector: map[string]string{"zone": "a"}},
		{name: "label on the API's node", current: labelled, selector: map[string]string{"zone": "a"}, admit: true},
		{name: "affinity to this node", affinity: nameIs("n1"), admit: true},
		{name: "affinity to another node", affinity: nameIs("n2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var current func() *v1.Node
			if tc.current != nil {
				current = func() *v1.Node { return tc.current }
			} else {
				current = func() *v1.Node { return nil }
			}
			pod := &v1.Pod{Spec: v1.PodSpec{NodeSelector: tc.selector, Affinity: tc.affinity}}
			ok, reason, msg := nodeAffinityAdmitter(current, registered)(pod)
			if ok != tc.admit {
				t.Fatalf("admit = %v (%s: %s), want %v", ok, reason, msg, tc.admit)
			}
			if !ok && (reason != "NodeAffinity" || msg != "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector") {
				t.Errorf("rejected with %q %q, want the kubelet's NodeAffinity failure", reason, msg)
			}
		})
	}
}
