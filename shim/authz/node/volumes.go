package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Volumes reads PersistentVolumes (cluster-scoped) for the edges "pv ->
// pvc" of upstream's graph: a volume's spec.claimRef. A missing volume is
// (nil, nil). It must be safe for concurrent use and may block (a storage
// read).
type Volumes interface {
	PersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// persistentVolume: get of a PersistentVolume whose spec.claimRef names a
// claim that a pod bound to the node uses, in the claim's namespace
// (upstream's authorizeGet over its graph's pv -> pvc -> pod -> node
// edges, the first one from the volume's claimRef as in its AddPV; so a
// claim's spec.volumeName, which whoever may create claims sets, gives no
// access to a volume bound elsewhere). Mirror pods relate nothing, list
// and watch are refused; without Volumes every volume is.
func (a *Authorizer) persistentVolume(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case attrs.GetVerb() != "get":
		return authorizer.DecisionNoOpinion, "can only get individual resources of this type", nil
	case attrs.GetSubresource() != "":
		return authorizer.DecisionNoOpinion, "cannot get subresource", nil
	case attrs.GetName() == "":
		return authorizer.DecisionNoOpinion, "No Object name found", nil
	case a.volumes == nil:
		return authorizer.DecisionNoOpinion, "no relationship to this object is known to the shim", nil
	}
	pv, err := a.volumes.PersistentVolume(ctx, attrs.GetName())
	if err != nil {
		return authorizer.DecisionNoOpinion, noRelationship(node), fmt.Errorf("persistent volume %s: %w", attrs.GetName(), err)
	}
	if pv == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace == "" || pv.Spec.ClaimRef.Name == "" {
		return authorizer.DecisionNoOpinion, noRelationship(node), nil
	}
	return a.relatedTo(ctx, node, pv.Spec.ClaimRef.Namespace, "persistentvolumeclaims", pv.Spec.ClaimRef.Name)
}
