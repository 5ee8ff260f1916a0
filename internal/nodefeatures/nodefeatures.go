// Package nodefeatures holds the node's declared features
// (NodeDeclaredFeatures, GA in 1.37): the features of upstream's registry
// (k8s.io/component-helpers/nodedeclaredfeatures) that skiff implements,
// which the node publishes in node.status.declaredFeatures, and the
// kubelet's checks of a pod, and of a pod update, against them.
//
// The API server's NodeDeclaredFeatureValidator and the scheduler read the
// same list: a pod update (a non-sidecar init container's resize, say)
// that needs a feature the node does not declare is refused before it
// reaches the node, and a pod that needs one is not scheduled there.
package nodefeatures

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/inplacepodresize"
	"k8s.io/component-helpers/nodedeclaredfeatures/types"
)

// Implemented returns the registry's features skiff implements, by name
// (a feature's name is its feature gate's). A feature is added here with
// the e2e test that proves it; the others are not declared, so a pod or an
// update that needs one is kept away from the node.
func Implemented() []string {
	return []string{
		// Non-sidecar init containers resize like the others
		// (agent/resize*.go, e2e TestInitContainerResize).
		inplacepodresize.IPPRInitContainersFeatureGate,
	}
}

// Set is the node's declared features and the kubelet's checks against
// them. Its methods are safe for concurrent use.
type Set struct {
	fw       *ndf.Framework
	declared []string
	set      ndf.FeatureSet
	version  *version.Version
}

// New returns the Set of a node of kubeletVersion (v1.37.2, with or
// without a build suffix) that implements the features named in
// implemented: those the registry discovers with their gates on, without
// the ones past their MaxVersion, as the kubelet's
// discoverNodeDeclaredFeatures. Names the registry lacks are ignored.
func New(kubeletVersion string, implemented []string) (*Set, error) {
	v, err := version.ParseGeneric(kubeletVersion)
	if err != nil {
		return nil, fmt.Errorf("node declared features: kubelet version %q: %w", kubeletVersion, err)
	}
	gates := types.FeatureGateMap{}
	for _, name := range implemented {
		gates[name] = true
	}
	fw := ndf.DefaultFramework
	declared := fw.DiscoverNodeFeatures(&ndf.NodeConfiguration{FeatureGates: gates, Version: v})
	set, err := fw.MapSorted(declared)
	if err != nil {
		return nil, fmt.Errorf("node declared features %v: %w", declared, err)
	}
	return &Set{fw: fw, declared: declared, set: set, version: v}, nil
}

// Declared is node.status.declaredFeatures: sorted, a fresh slice; nil
// when none.
func (s *Set) Declared() []string { return slices.Clone(s.declared) }

// MissingForPod returns the features pod needs that the node does not
// declare (the kubelet's declaredFeaturesAdmitHandler, which rejects such
// a pod with reason PodFeatureUnsupported); empty when none. Pure.
func (s *Set) MissingForPod(pod *v1.Pod) ([]string, error) {
	reqs, err := s.fw.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, s.version)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: inferring its node features: %w", pod.Namespace, pod.Name, err)
	}
	return s.missing(reqs)
}

// MissingForUpdate returns the features the update of old to updated
// needs that the node does not declare (the kubelet logs them and
// records a FailedNodeDeclaredFeaturesCheck event, then applies the
// update); empty when none. Pure.
func (s *Set) MissingForUpdate(old, updated *v1.Pod) ([]string, error) {
	reqs, err := s.fw.InferForPodUpdate(&ndf.PodInfo{Spec: &old.Spec, Status: &old.Status},
		&ndf.PodInfo{Spec: &updated.Spec, Status: &updated.Status}, s.version)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: inferring the node features of its update: %w", updated.Namespace, updated.Name, err)
	}
	return s.missing(reqs)
}

func (s *Set) missing(reqs ndf.FeatureSet) ([]string, error) {
	m, err := s.fw.MatchNodeFeatureSet(reqs, s.set)
	if err != nil {
		return nil, fmt.Errorf("matching the node's declared features: %w", err)
	}
	return m.UnsatisfiedRequirements, nil
}
