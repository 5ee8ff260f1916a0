package node

import (
	goruntime "runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/nodestatus"
)

// The kubelet's admission failure for a pod whose node selector or
// required node affinity does not match the node (its predicate admission,
// with the scheduler's NodeAffinity reason).
const (
	nodeAffinityReason  = "NodeAffinity"
	nodeAffinityMessage = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
)

// nodeAffinityAdmitter rejects a pod whose spec.nodeSelector or required
// node affinity (spec.affinity.nodeAffinity.requiredDuringScheduling...)
// does not match the node, as the kubelet's predicate admission does for
// every pod, static ones too. current is the node as the API server has it
// (nil, or returning nil: not known), else registered is used: the Node
// the agent registers (its default labels and --node-labels).
func nodeAffinityAdmitter(current func() *v1.Node, registered *v1.Node) agent.PodAdmitter {
	return func(pod *v1.Pod) (bool, string, string) {
		node := registered
		if current != nil {
			if n := current(); n != nil {
				node = n
			}
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); ok && err == nil {
			return true, "", ""
		}
		return false, nodeAffinityReason, nodeAffinityMessage
	}
}

// registeredNode is the Node the agent registers as name with labels
// (--node-labels): nodestatus.Initial.
func registeredNode(name string, labels map[string]string) *v1.Node {
	return nodestatus.Initial(nodestatus.Registration{
		Name: name, Hostname: name, OS: goruntime.GOOS, Arch: goruntime.GOARCH, Labels: labels,
	})
}
