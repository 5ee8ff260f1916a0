package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// pod: upstream's authorizePod (AuthorizeNodeWithSelectors on). A node
// gets the pods bound to it, lists and watches pods only with its
// spec.nodeName field selector (or one pod by name that is bound to it),
// creates and deletes pods (mirror pods; NodeRestriction narrows), writes
// pod status and creates evictions (NodeRestriction: its own pods).
func (a *Authorizer) pod(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	verb := attrs.GetVerb()
	switch attrs.GetSubresource() {
	case "":
		switch verb {
		case "get":
			return a.get(ctx, node, attrs)
		case "list", "watch":
			if hasNodeSelector(attrs, "spec.nodeName", node) {
				return authorizer.DecisionAllow, "", nil
			}
			if attrs.GetName() != "" {
				return a.related(ctx, node, attrs)
			}
			return authorizer.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case "create", "delete":
			return authorizer.DecisionAllow, "", nil
		}
	case "status":
		if verb == "update" || verb == "patch" {
			return authorizer.DecisionAllow, "", nil
		}
	case "eviction":
		if verb == "create" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// node: upstream's authorizeNode. Create, update and patch of Nodes and
// their status (NodeRestriction: only its own), reads of its own Node by
// name only (compared directly, so a kubelet may read it before it
// exists).
func (a *Authorizer) node(_ context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	verb := attrs.GetVerb()
	switch attrs.GetSubresource() {
	case "":
		switch verb {
		case "create", "update", "patch":
			return authorizer.DecisionAllow, "", nil
		case "get", "list", "watch":
			switch attrs.GetName() {
			case node:
				return authorizer.DecisionAllow, "", nil
			case "":
				return authorizer.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node), nil
			default:
				return authorizer.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, attrs.GetName()), nil
			}
		}
	case "status":
		if verb == "update" || verb == "patch" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// lease: upstream's authorizeLease. Get, create, update, patch and delete
// of the Lease named as the node in kube-node-lease (the name of a create
// is checked by NodeRestriction: the authorizer does not see it).
func (a *Authorizer) lease(_ context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !ownObjectVerb(attrs.GetVerb()) {
		return authorizer.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.GetNamespace() != corev1.NamespaceNodeLease {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	}
	if attrs.GetVerb() != "create" && attrs.GetName() != node {
		return authorizer.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authorizer.DecisionAllow, "", nil
}

// csiNode: upstream's authorizeCSINode, the CSINode named as the node.
func (a *Authorizer) csiNode(_ context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !ownObjectVerb(attrs.GetVerb()) {
		return authorizer.DecisionNoOpinion, "can only get, create, update, patch, or delete a CSINode", nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot authorize CSINode subresources", nil
	}
	if attrs.GetVerb() != "create" && attrs.GetName() != node {
		return authorizer.DecisionNoOpinion, "can only access CSINode with the same name as the requesting node", nil
	}
	return authorizer.DecisionAllow, "", nil
}

// ownObjectVerb: the verbs a node has on the objects named after it.
func ownObjectVerb(verb string) bool {
	switch verb {
	case "get", "create", "update", "patch", "delete":
		return true
	}
	return false
}
