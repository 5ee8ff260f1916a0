// Package node is the shim's Node authorizer: what a kubelet, identified
// as user system:node:<name> in group system:nodes, may do through the
// API. It re-implements Kubernetes 1.34's
// plugin/pkg/auth/authorizer/node/node_authorizer.go for what the shim
// serves, with its static rules (rules.go) and its graph of "objects
// related to a node" answered from the pods bound to the node (Pods) and
// the PersistentVolumes' claimRefs (Volumes) instead of a graph kept in
// memory. The NodeRestriction admission plugin
// (shim/admission/noderestriction) narrows the writes it allows.
package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Pods lists the pods bound to a node (spec.nodeName) in one namespace:
// the edges "pod -> node" of upstream's graph. It must be safe for
// concurrent use and may block (a storage read); it should read what the
// API has just written (a stale answer only delays or extends access by
// that staleness, as upstream's informer-fed graph).
type Pods interface {
	PodsOnNode(ctx context.Context, namespace, node string) ([]*corev1.Pod, error)
}

// Authorizer decides requests of node identities and has no opinion on
// anyone else's. Safe for concurrent use; Authorize blocks on Pods (and
// Volumes) for the related-object checks.
type Authorizer struct {
	pods    Pods
	volumes Volumes
	rules   []rule
	// subdivided resources are decided by their own function, as in
	// upstream's Authorize; the rest by the static rules.
	subdivided map[schema.GroupResource]decideFunc
}

type decideFunc func(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error)

var _ authorizer.Authorizer = &Authorizer{}

// New returns the Node authorizer over pods and volumes; nil volumes (a
// shim that serves no PersistentVolumes): every PersistentVolume is
// refused.
func New(pods Pods, volumes Volumes) *Authorizer {
	a := &Authorizer{pods: pods, volumes: volumes, rules: nodeRules()}
	unrelated := func(context.Context, string, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionNoOpinion, "no relationship to this object is known to the shim", nil
	}
	a.subdivided = map[schema.GroupResource]decideFunc{
		{Resource: "secrets"}:                              a.readRelated,
		{Resource: "configmaps"}:                           a.readRelated,
		{Resource: "persistentvolumeclaims"}:               a.claim,
		{Resource: "persistentvolumes"}:                    a.persistentVolume,
		{Resource: "serviceaccounts"}:                      a.serviceAccount,
		{Resource: "pods"}:                                 a.pod,
		{Resource: "nodes"}:                                a.node,
		{Group: "coordination.k8s.io", Resource: "leases"}: a.lease,
		{Group: "storage.k8s.io", Resource: "csinodes"}:    a.csiNode,
		// Not served by the shim, and upstream decides them through
		// objects the shim does not have (VolumeAttachment -> node,
		// ResourceClaim and ResourceSlice -> node): refused.
		{Group: "storage.k8s.io", Resource: "volumeattachments"}: unrelated,
		{Group: "resource.k8s.io", Resource: "resourceclaims"}:   unrelated,
		{Group: "resource.k8s.io", Resource: "resourceslices"}:   unrelated,
	}
	return a
}

// ConditionsAwareAuthorize implements authorizer.Authorizer: the Node
// authorizer's decisions are never conditional.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer; as it never returns
// a conditional decision, it fails closed.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	node, isNode := Identity(attrs.GetUser())
	if !isNode {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", attrs.GetUser().GetName()), nil
	}
	if attrs.IsResourceRequest() {
		gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
		if decide, ok := a.subdivided[gr]; ok {
			return decide(ctx, node, attrs)
		}
	}
	if allows(a.rules, attrs) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// readRelated: get, list and watch of one named, namespaced object (list
// and watch name it with a metadata.name field selector) referenced by a
// pod bound to the node (upstream's authorizeReadNamespacedObject).
func (a *Authorizer) readRelated(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case attrs.GetVerb() != "get" && attrs.GetVerb() != "list" && attrs.GetVerb() != "watch":
		return authorizer.DecisionNoOpinion, "can only read resources of this type", nil
	case attrs.GetSubresource() != "":
		return authorizer.DecisionNoOpinion, "cannot read subresource", nil
	case attrs.GetNamespace() == "":
		return authorizer.DecisionNoOpinion, "can only read namespaced object of this type", nil
	}
	return a.related(ctx, node, attrs)
}

// claim: get of a PVC, update/patch of its status, when a pod bound to the
// node uses it (upstream's authorizeGet and authorizeStatusUpdate).
func (a *Authorizer) claim(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetSubresource() == "status" {
		if attrs.GetVerb() != "update" && attrs.GetVerb() != "patch" {
			return authorizer.DecisionNoOpinion, "can only get/update/patch this type", nil
		}
		return a.related(ctx, node, attrs)
	}
	return a.get(ctx, node, attrs)
}

// get: get (no subresource) of an object related to the node.
func (a *Authorizer) get(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() != "get" {
		return authorizer.DecisionNoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot get subresource", nil
	}
	return a.related(ctx, node, attrs)
}

// serviceAccount: get of the service account of a pod bound to the node
// (KubeletServiceAccountTokenForCredentialProviders, on in 1.34), and
// create of its token subresource (upstream's authorizeServiceAccount).
func (a *Authorizer) serviceAccount(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() == "get" && attrs.GetSubresource() == "" {
		return a.readRelated(ctx, node, attrs)
	}
	if attrs.GetVerb() != "create" || attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	}
	if attrs.GetSubresource() != "token" {
		return authorizer.DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return a.related(ctx, node, attrs)
}

// related allows the request when a pod bound to the node references the
// named object (or, for pods, is it). Mirror pods relate only themselves:
// a node must not gain access to objects through pods it creates
// (upstream's graph.AddPod short-circuit).
func (a *Authorizer) related(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "No Object name found", nil
	}
	return a.relatedTo(ctx, node, attrs.GetNamespace(), attrs.GetResource(), attrs.GetName())
}

// relatedTo allows when a pod bound to the node in namespace references
// the object resource/name (or, for pods, is it), as related.
func (a *Authorizer) relatedTo(ctx context.Context, node, namespace, resource, name string) (authorizer.Decision, string, error) {
	pods, err := a.pods.PodsOnNode(ctx, namespace, node)
	if err != nil {
		return authorizer.DecisionNoOpinion, noRelationship(node), fmt.Errorf("pods on node %s: %w", node, err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != node || p.Namespace != namespace {
			continue
		}
		if resource == "pods" {
			if p.Name == name {
				return authorizer.DecisionAllow, "", nil
			}
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if references(p, resource, name) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, noRelationship(node), nil
}

// noRelationship is upstream's reason for a refused related object.
func noRelationship(node string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// references reports whether pod references the object resource/name.
// An empty serviceAccountName counts as "default": the ServiceAccount
// admission plugin sets it before the graph sees the pod, but pods stored
// before the shim had that plugin lack it, and skiff's agent then
// requests tokens of "default".
func references(pod *corev1.Pod, resource, name string) bool {
	if resource == "serviceaccounts" && pod.Spec.ServiceAccountName == "" {
		return name == "default"
	}
	found := false
	VisitReferences(pod, func(r, n string) bool {
		found = r == resource && n == name
		return !found
	})
	return found
}

// hasNodeSelector reports whether a list or watch is scoped to the node
// by field (e.g. spec.nodeName=<node>), as AuthorizeNodeWithSelectors
// (GA and locked on in 1.34) requires.
func hasNodeSelector(attrs authorizer.Attributes, field, node string) bool {
	reqs, _ := attrs.GetFieldSelector()
	for _, r := range reqs {
		if r.Field == field && r.Operator == selection.Equals && r.Value == node {
			return true
		}
	}
	return false
}
