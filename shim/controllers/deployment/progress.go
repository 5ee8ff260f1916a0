package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/shim/controllers/worker"
)

// calculateStatus is upstream's calculateStatus (sync.go): counts over
// the ReplicaSets and the Available condition.
func (c *Controller) calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := sum(all, availableReplicas)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sum(all, statusReplicas),
		UpdatedReplicas:     sum([]*appsv1.ReplicaSet{newRS}, statusReplicas),
		ReadyReplicas:       sum(all, readyReplicas),
		AvailableReplicas:   available,
		UnavailableReplicas: max(sum(all, replicas)-available, 0),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= dReplicas(d)-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, reasonMinAvailable, "Deployment has minimum availability.", c.now()))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, reasonMinUnavailable, "Deployment does not have minimum availability.", c.now()))
	}
	return st
}

// syncRolloutStatus is upstream's (progress.go): the status with the
// Progressing condition (NewReplicaSetAvailable once complete,
// ReplicaSetUpdated while progressing, ProgressDeadlineExceeded after
// progressDeadlineSeconds without progress). Without a write, a rollout in
// progress is requeued for its deadline (*worker.Requeue).
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := c.calculateStatus(all, newRS, d)
	if d.Spec.ProgressDeadlineSeconds == nil {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := condition(&d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == reasonNewRSAvailable
	if d.Spec.ProgressDeadlineSeconds != nil && !complete {
		c.setProgressing(&st, cur, newRS, d)
	}
	if equality.Semantic.DeepEqual(d.Status, st) {
		if after := c.stuckRequeue(d, &st); after > 0 {
			return &worker.Requeue{After: after, Reason: "progress deadline check"}
		}
		return nil
	}
	d.Status = st
	return c.updateStatus(ctx, d)
}

// setProgressing sets the Progressing condition for a rollout not yet
// recorded as complete.
func (c *Controller) setProgressing(st *appsv1.DeploymentStatus, cur *appsv1.DeploymentCondition, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) {
	subject := fmt.Sprintf("Deployment %q", d.Name)
	if newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
	}
	switch {
	case deploymentComplete(d, st):
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSAvailable, subject+" has successfully progressed.", c.now()))
	case deploymentProgressing(d, st):
		cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonRSUpdated, subject+" is progressing.", c.now())
		if cur != nil {
			if cur.Status == corev1.ConditionTrue {
				cond.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(st, appsv1.DeploymentProgressing)
		}
		setCondition(st, cond)
	case c.timedOut(d, st):
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonTimedOut, subject+" has timed out progressing.", c.now()))
	}
}

// deploymentComplete is upstream's DeploymentComplete.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := dReplicas(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// deploymentProgressing is upstream's DeploymentProgressing: more updated,
// ready or available replicas, or fewer old ones, than last recorded.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

// timedOut is upstream's DeploymentTimedOut: no progress recorded for
// progressDeadlineSeconds.
func (c *Controller) timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	cond := condition(st, appsv1.DeploymentProgressing)
	if d.Spec.ProgressDeadlineSeconds == nil || cond == nil || cond.Reason == reasonNewRSAvailable {
		return false
	}
	if cond.Reason == reasonTimedOut {
		return true
	}
	deadline := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(c.clock.Now())
}

// stuckRequeue is upstream's requeueStuckDeployment: when to look again
// at a rollout in progress for its deadline; 0: no need.
func (c *Controller) stuckRequeue(d *appsv1.Deployment, st *appsv1.DeploymentStatus) time.Duration {
	cond := condition(&d.Status, appsv1.DeploymentProgressing)
	if d.Spec.ProgressDeadlineSeconds == nil || cond == nil || deploymentComplete(d, st) || cond.Reason == reasonTimedOut {
		return 0
	}
	after := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(c.clock.Now())
	return max(after, 0) + time.Second
}

// mustSelector is d's selector; validation guarantees it parses.
func mustSelector(d *appsv1.Deployment) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// controllerOf is the UID of obj's controller, "" if none.
func controllerOf(obj metav1.Object) types.UID {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return ref.UID
	}
	return ""
}
