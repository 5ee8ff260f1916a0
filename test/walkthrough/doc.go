// Package walkthrough runs the reference docs' kubectl walk-throughs
// (checklist I.58-I.72: finalizers, owner references, the three
// propagation policies by kubectl and through `kubectl proxy`, selectors,
// namespaces and finalize) against skiff's control-plane shim and against
// a real kube-apiserver + kube-controller-manager of the same version
// (test/cluster), and requires the same output apart from ages, UIDs,
// resource versions and timestamps (issue 17, "Tests").
//
// Gated like the e2e suite: SKIFF_E2E=1 with SKIFF_APISERVER (make
// build-apiserver) and SKIFF_CONTROLPLANE (make controlplane, whose
// kubectl 1.34 drives both).
package walkthrough
