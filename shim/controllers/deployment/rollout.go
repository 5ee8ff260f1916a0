package deployment

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRolling is upstream's rolloutRolling: grow the new ReplicaSet up
// to spec.replicas+maxSurge pods in all, else shrink the old ones while
// spec.replicas-maxUnavailable pods stay available, else clean up.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSets(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(slices.Clone(old), newRS)
	scaled, err := c.reconcileNewReplicaSet(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if !scaled {
		if scaled, err = c.reconcileOldReplicaSets(ctx, all, active(old), newRS, d); err != nil {
			return err
		}
	}
	if !scaled && deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// reconcileNewReplicaSet scales the new ReplicaSet towards spec.replicas.
func (c *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch {
	case replicas(newRS) == dReplicas(d):
		return false, nil
	case replicas(newRS) > dReplicas(d):
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, dReplicas(d), d)
		return scaled, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, newRSReplicas(d, all, newRS), d)
	return scaled, err
}

// reconcileOldReplicaSets is upstream's: first old replicas that are not
// available, then available ones, never below minAvailable.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sum(old, replicas) == 0 {
		return false, nil
	}
	minAvailable := dReplicas(d) - maxUnavailable(d)
	newUnavailable := replicas(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := sum(all, replicas) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	slices.SortFunc(old, byCreation)
	cleaned := int32(0)
	for _, rs := range old {
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := replicas(rs) - rs.Status.AvailableReplicas
		if replicas(rs) == 0 || unhealthy <= 0 {
			continue
		}
		n := min(maxScaledDown-cleaned, unhealthy)
		if _, _, err := c.scaleReplicaSet(ctx, rs, replicas(rs)-n, d); err != nil {
			return false, err
		}
		cleaned += n
	}
	scaledDown, err := c.scaleDownOldForRollingUpdate(ctx, append(slices.Clone(old), newRS), old, d)
	return cleaned+scaledDown > 0, err
}

// scaleDownOldForRollingUpdate removes available old replicas, oldest
// ReplicaSet first, as far as minAvailable allows.
func (c *Controller) scaleDownOldForRollingUpdate(ctx context.Context, all, old []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := dReplicas(d) - maxUnavailable(d)
	available := sum(all, availableReplicas)
	if available <= minAvailable {
		return 0, nil
	}
	total := available - minAvailable
	done := int32(0)
	for _, rs := range old {
		if done >= total {
			break
		}
		if replicas(rs) == 0 {
			continue
		}
		n := min(replicas(rs), total-done)
		if _, _, err := c.scaleReplicaSet(ctx, rs, replicas(rs)-n, d); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// rolloutRecreate is upstream's rolloutRecreate: old ReplicaSets to 0,
// wait until none of their pods runs, then create and scale up the new.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(slices.Clone(old), newRS)
	scaledDown := false
	for _, rs := range active(old) {
		scaled, _, err := c.scaleReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	running, err := c.oldPodsRunning(d, newRS, old, rsList)
	if err != nil {
		return err
	}
	if running {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = c.allReplicaSets(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(slices.Clone(old), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, dReplicas(d), d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning is upstream's: an old ReplicaSet still counts pods, or
// a pod of one (terminating included) has not finished.
func (c *Controller) oldPodsRunning(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old, rsList []*appsv1.ReplicaSet) (bool, error) {
	if sum(old, statusReplicas) > 0 {
		return true, nil
	}
	owners := map[types.UID]bool{}
	for _, rs := range rsList {
		if newRS == nil || rs.UID != newRS.UID {
			owners[rs.UID] = true
		}
	}
	pods, err := c.pods.Pods(d.Namespace).List(mustSelector(d))
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		ref := controllerOf(p)
		if ref == "" || !owners[ref] {
			continue
		}
		if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			return true, nil
		}
	}
	return false, nil
}
