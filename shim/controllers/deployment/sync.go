package deployment

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffnode/skiff/shim/controllers/controllerref"
)

// sync is upstream's syncDeployment: claim the ReplicaSets, then only the
// status for a Deployment being deleted, scaling for a paused one or a
// replicas change, else a rollout step of the strategy.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.event(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return c.updateStatus(ctx, d)
		}
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, old, err := c.allReplicaSets(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, append(old, newRS), newRS, d)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if d.Spec.Paused || scaling {
		return c.scaleOnly(ctx, d, rsList)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, d, rsList)
	}
	return c.rolloutRolling(ctx, d, rsList)
}

// claimReplicaSets adopts and releases the namespace's ReplicaSets by d's
// selector (upstream's getReplicaSetsForDeployment).
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	claimer := &controllerref.Claimer{
		Owner: d, OwnerKind: controllerKind, Selector: sel,
		CanAdopt: controllerref.RecheckOwner(d.UID, func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		}),
		Patch: func(ctx context.Context, name string, patch []byte) error {
			_, err := c.client.AppsV1().ReplicaSets(d.Namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		},
	}
	claimed, err := controllerref.Claim(ctx, claimer, all)
	// Copies: the sync updates them in place after each write.
	for i, rs := range claimed {
		claimed[i] = rs.DeepCopy()
	}
	return claimed, err
}

// allReplicaSets is upstream's getAllReplicaSetsAndSyncRevision: the new
// ReplicaSet (created if create and missing; nil otherwise) and the old.
func (c *Controller) allReplicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	old := findOldReplicaSets(d, rsList)
	newRS, err := c.newReplicaSet(ctx, d, rsList, old, create)
	return newRS, old, err
}

// isScalingEvent: an active ReplicaSet was sized for other replicas.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := c.allReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range active(append(old, newRS)) {
		if desired, ok := annotatedInt(rs, desiredReplicasAnnotation); ok && desired != dReplicas(d) {
			return true, nil
		}
	}
	return false, nil
}

// scaleOnly is upstream's sync: scale, clean up if paused, status.
func (c *Controller) scaleOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, append(old, newRS), newRS, d)
}

// scale is upstream's scale: one active ReplicaSet takes spec.replicas; a
// saturated new one leaves the old at 0; during a rolling update the
// difference is shared in proportion to the ReplicaSets' sizes.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, old); rs != nil {
		_, _, err := c.scaleReplicaSet(ctx, rs, dReplicas(d), d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range active(old) {
			if _, _, err := c.scaleReplicaSet(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return nil
	}
	return c.scaleProportionally(ctx, d, active(append(old, newRS)))
}

// scaleProportionally adds or removes the replicas between the
// Deployment's allowed size and the ReplicaSets' total, largest first
// (newest on ties for growth, oldest for shrinking); the rounding
// leftover goes to the first.
func (c *Controller) scaleProportionally(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet) error {
	allowed := int32(0)
	if dReplicas(d) > 0 {
		allowed = dReplicas(d) + maxSurge(d)
	}
	toAdd := allowed - sum(all, replicas)
	slices.SortFunc(all, func(a, b *appsv1.ReplicaSet) int {
		if replicas(a) != replicas(b) {
			return int(replicas(b) - replicas(a))
		}
		if toAdd > 0 {
			return -byCreation(a, b)
		}
		return byCreation(a, b)
	})
	sizes := make([]int32, len(all))
	added := int32(0)
	for i, rs := range all {
		p := proportion(rs, d, toAdd, added)
		sizes[i] = replicas(rs) + p
		added += p
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			sizes[0] = max(sizes[0]+toAdd-added, 0)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[i], d); err != nil {
			return err
		}
	}
	return nil
}

// activeOrLatest is upstream's FindActiveOrLatest: the only active
// ReplicaSet, or the newest if none is active; nil if several are.
func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	old = slices.Clone(old)
	slices.SortFunc(old, func(a, b *appsv1.ReplicaSet) int { return -byCreation(a, b) })
	all := active(append(old, newRS))
	switch len(all) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return old[0]
	case 1:
		return all[0]
	}
	return nil
}

// scaleReplicaSet sets rs's replicas and replicas annotations (upstream's
// scaleReplicaSet); scaled is true if the size changed.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, n int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := replicas(rs) != n
	cp := rs.DeepCopy()
	annotationsChanged := setReplicasAnnotations(cp, dReplicas(d), dReplicas(d)+maxSurge(d))
	if !sizeChanged && !annotationsChanged {
		return false, rs, nil
	}
	from := replicas(rs)
	cp.Spec.Replicas = &n
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, fmt.Errorf("scale replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if sizeChanged {
		op := "up"
		if n < from {
			op = "down"
		}
		c.event(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", op, rs.Name, from, n)
	}
	*rs = *updated
	return sizeChanged, rs, nil
}

// cleanup deletes the oldest old ReplicaSets beyond revisionHistoryLimit
// that are scaled to 0 and settled (upstream's cleanupDeployment).
func (c *Controller) cleanup(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	alive := slices.DeleteFunc(slices.Clone(old), func(rs *appsv1.ReplicaSet) bool { return rs == nil || rs.DeletionTimestamp != nil })
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	slices.SortFunc(alive, func(a, b *appsv1.ReplicaSet) int {
		if ra, rb := revision(a), revision(b); ra != rb {
			return int(ra - rb)
		}
		return byCreation(a, b)
	})
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// syncStatus writes calculateStatus's result if it differs.
func (c *Controller) syncStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := c.calculateStatus(all, newRS, d)
	if equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return c.updateStatus(ctx, d)
}
