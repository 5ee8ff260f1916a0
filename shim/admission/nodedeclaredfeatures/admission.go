// Package nodedeclaredfeatures is the pod part of upstream's
// NodeDeclaredFeatureValidator admission plugin
// (plugin/pkg/admission/nodedeclaredfeatures, Kubernetes 1.37, where
// NodeDeclaredFeatures is GA and the plugin on by default): an update of a
// pod bound to a node, through the main resource or pods/resize, that
// needs a feature the node does not list in status.declaredFeatures is
// refused (403), e.g. the resize of a non-sidecar init container
// (InPlacePodVerticalScalingInitContainers) or of pod-level resources.
// The inference is component-helpers' (nodedeclaredfeatures), as
// upstream's. Its ResourceSlice checks are left out: the shim serves no
// resource.k8s.io.
package nodedeclaredfeatures

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// PluginName names the plugin in admission errors and metrics.
const PluginName = "NodeDeclaredFeatureValidator"

// Nodes reads a Node by name; an absent one is a NotFound API error.
// noderestriction.ClientLookup is one.
type Nodes interface {
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// Plugin checks pod updates against the declared features of the pod's
// node, read when an update needs any (upstream reads an informer).
// Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	nodes     Nodes
	framework *ndf.Framework
	version   *version.Version
}

var (
	_ admission.ValidationInterface     = &Plugin{}
	_ admission.InitializationValidator = &Plugin{}
)

// New returns the plugin reading nodes through nodes, inferring features
// for a cluster at version v (the server's binary version, as upstream's
// version.Get()); it handles updates.
func New(nodes Nodes, v *version.Version) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Update), nodes: nodes,
		framework: ndf.DefaultFramework, version: v}
}

// ValidateInitialization implements admission.InitializationValidator.
func (p *Plugin) ValidateInitialization() error {
	switch {
	case p.nodes == nil:
		return fmt.Errorf("missing node lookup for %s", PluginName)
	case p.version == nil:
		return fmt.Errorf("missing version for %s", PluginName)
	}
	return nil
}

// Validate implements admission.ValidationInterface: updates of pods
// (main resource or pods/resize) bound to a node that change the spec
// (the generation was bumped) and need declared features (the
// framework's InferForPodUpdate) must be to a node declaring them all;
// else 403 "pod update requires features ... which are not available on
// node ...". Blocks on one Node read when features are needed.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() != admission.Update || a.GetResource().GroupResource() != corev1.Resource("pods") {
		return nil
	}
	if sub := a.GetSubresource(); sub != "" && sub != "resize" {
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
	return p.validatePodUpdate(ctx, pod, oldPod, a)
}

// validatePodUpdate is upstream's: the features the update needs, matched
// against the node's.
func (p *Plugin) validatePodUpdate(ctx context.Context, pod, oldPod *corev1.Pod, a admission.Attributes) error {
	reqs, err := p.framework.InferForPodUpdate(&ndf.PodInfo{Spec: &oldPod.Spec, Status: &oldPod.Status},
		&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, p.version)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to infer pod capability requirements: %w", err))
	}
	if reqs.IsEmpty() {
		return nil
	}
	node, err := p.nodes.Node(ctx, pod.Spec.NodeName)
	switch {
	case apierrors.IsNotFound(err):
		return admission.NewForbidden(a, fmt.Errorf("node %q not found", pod.Spec.NodeName))
	case err != nil:
		return admission.NewForbidden(a, fmt.Errorf("failed to get node %q: %w", pod.Spec.NodeName, err))
	}
	result, err := p.framework.MatchNode(reqs, node)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to match pod requirements against node %q: %w", node.Name, err))
	}
	if !result.IsMatch {
		return admission.NewForbidden(a, fmt.Errorf("pod update requires features %s which are not available on node %q",
			strings.Join(result.UnsatisfiedRequirements, ", "), node.Name))
	}
	return nil
}
