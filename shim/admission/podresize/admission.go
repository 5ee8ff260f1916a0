// Package podresize is upstream's PodResizeValidator admission plugin
// (plugin/pkg/admission/podresize, Kubernetes 1.37, where
// InPlacePodVerticalScaling is GA and the plugin on by default): a resize
// of a pod bound to a node is refused (403) when the node is not a Linux
// node or cannot hold the pod's new requests.
package podresize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	resourcehelper "k8s.io/component-helpers/resource"
)

const (
	// PluginName names the plugin in admission errors and metrics.
	PluginName = "PodResizeValidator"

	// ReasonNodeCapacity is the cause of a refusal for the node's
	// allocatable resources.
	ReasonNodeCapacity metav1.CauseType = "NodeCapacity"
	// ReasonUnsupportedPlatform is the cause of a refusal for the node's OS.
	ReasonUnsupportedPlatform metav1.CauseType = "UnsupportedPlatform"
)

// Nodes reads a Node by name; an absent one is a NotFound API error.
// noderestriction.ClientLookup is one.
type Nodes interface {
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// Plugin validates updates through pods/resize against the pod's node.
// Upstream reads nodes from an informer; the shim reads the one node a
// resize needs (no second copy of the Nodes, nothing to sync first).
// Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	nodes Nodes
}

var (
	_ admission.ValidationInterface     = &Plugin{}
	_ admission.InitializationValidator = &Plugin{}
)

// New returns the plugin reading nodes through nodes; it handles updates.
func New(nodes Nodes) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Update), nodes: nodes}
}

// ValidateInitialization implements admission.InitializationValidator.
func (p *Plugin) ValidateInitialization() error {
	if p.nodes == nil {
		return fmt.Errorf("missing node lookup for %s", PluginName)
	}
	return nil
}

// Validate implements admission.ValidationInterface: an update through
// pods/resize of a pod bound to a node that changes its spec (the
// generation was bumped) must fit the node: a Linux node (or one without
// the kubernetes.io/os label) whose status.allocatable cpu and memory
// hold the pod's new requests (component-helpers' PodRequests: app
// containers, plus init containers as the kubelet counts them). Refusals
// are 403s; a missing node is one too. Blocks on one Node read.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() != admission.Update || a.GetResource().GroupResource() != corev1.Resource("pods") ||
		a.GetSubresource() != "resize" {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected a pod but got a %T", a.GetObject()))
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	oldPod, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected an old pod but got a %T", a.GetOldObject()))
	}
	if oldPod.Generation == pod.Generation {
		return nil
	}
	node, err := p.nodes.Node(ctx, pod.Spec.NodeName)
	switch {
	case apierrors.IsNotFound(err):
		return admission.NewForbidden(a, fmt.Errorf("node %q not found", pod.Spec.NodeName))
	case err != nil:
		return admission.NewForbidden(a, fmt.Errorf("failed to get node %q: %w", pod.Spec.NodeName, err))
	}
	if err := validateLinuxNode(node); err != nil {
		return resizeValidationError(a, err, ReasonUnsupportedPlatform)
	}
	if err := validateRequestsWithinAllocatable(pod, node.Status.Allocatable); err != nil {
		return resizeValidationError(a, err, ReasonNodeCapacity)
	}
	return nil
}

// validateLinuxNode refuses a node whose kubernetes.io/os label is set to
// another OS than linux.
func validateLinuxNode(node *corev1.Node) error {
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return fmt.Errorf("pod resize is only supported on linux nodes, node %q is %q", node.Name, os)
	}
	return nil
}

// validateRequestsWithinAllocatable refuses requests of cpu or memory
// above allocatable, with upstream's message (millicores, bytes).
func validateRequestsWithinAllocatable(pod *corev1.Pod, allocatable corev1.ResourceList) error {
	cpuAllocatable, memAllocatable := allocatable.Cpu(), allocatable.Memory()
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpuRequests, memRequests := requests[corev1.ResourceCPU], requests[corev1.ResourceMemory]
	var msg []string
	if cpuRequests.Cmp(*cpuAllocatable) > 0 {
		msg = append(msg, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpuRequests.MilliValue(), cpuAllocatable.MilliValue()))
	}
	if memRequests.Cmp(*memAllocatable) > 0 {
		msg = append(msg, fmt.Sprintf("memory, requested: %d, allocatable: %d", memRequests.Value(), memAllocatable.Value()))
	}
	if len(msg) > 0 {
		return fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(msg, "; "))
	}
	return nil
}

// resizeValidationError is a 403 for a with err's message and reason as
// a cause, unwrapped (the handler reads its status by type assertion).
func resizeValidationError(a admission.Attributes, err error, reason metav1.CauseType) error {
	forbidden := admission.NewForbidden(a, err)
	var status *apierrors.StatusError
	if errors.As(forbidden, &status) {
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Type: reason})
		return status
	}
	return forbidden
}
