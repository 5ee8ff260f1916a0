// Package singlenode is the shim's stand-in for kube-scheduler: on a
// one-node control plane every pod created without a node is placed on
// that node at creation, so that `kubectl run` and a Deployment's pods run
// without a scheduler (see
// docs/decisions/0064-no-scheduler-shim-pods-placed-node.md).
package singlenode

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
)

// PluginName names the plugin in admission errors and metrics.
const PluginName = "SkiffSingleNode"

// Plugin sets spec.nodeName of new pods that have none and are for the
// default scheduler (a pod naming another scheduler is left to it). It
// does not check the node's resources: the node's agent admits or rejects
// the pod (OutOfcpu, ...) as a kubelet does. Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	node string
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin placing pods on node.
func New(node string) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), node: node}
}

// Admit implements admission.MutationInterface.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != corev1.Resource("pods") || a.GetSubresource() != "" {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok || pod.Spec.NodeName != "" {
		return nil
	}
	if s := pod.Spec.SchedulerName; s != "" && s != corev1.DefaultSchedulerName {
		return nil
	}
	pod.Spec.NodeName = p.node
	return nil
}
