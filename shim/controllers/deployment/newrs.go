package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/shim/controllers/controllerref"
)

// Progressing reasons (upstream's pkg/controller/deployment/util).
const (
	reasonNewRSCreated   = "NewReplicaSetCreated"
	reasonFoundNewRS     = "FoundNewReplicaSet"
	reasonRSCreateError  = "ReplicaSetCreateError"
	reasonNewRSAvailable = "NewReplicaSetAvailable"
	reasonRSUpdated      = "ReplicaSetUpdated"
	reasonTimedOut       = "ProgressDeadlineExceeded"
	reasonMinAvailable   = "MinimumReplicasAvailable"
	reasonMinUnavailable = "MinimumReplicasUnavailable"
)

// newReplicaSet is upstream's getNewReplicaSet: the ReplicaSet of d's
// template, its revision and minReadySeconds brought up to date, or (if
// create) a new one named <d>-<hash of the template and collisionCount>,
// with the hash in its selector and template labels. A name taken by a
// ReplicaSet of another template bumps status.collisionCount and fails
// the sync (the next one hashes differently).
func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := findNewReplicaSet(d, rsList)
	newRevision := maxRevision(old) + 1
	if existing != nil {
		return c.syncExistingNewRS(ctx, d, existing, newRevision)
	}
	if !create {
		return nil, nil
	}
	template := d.Spec.Template.DeepCopy()
	hash := ComputeHash(template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, hash)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(d, controllerKind)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32), MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: *template},
	}
	n := newRSReplicas(d, append(old, rs), rs)
	rs.Spec.Replicas = &n
	setNewRSAnnotations(d, rs, newRevision, false)
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return c.nameTaken(ctx, d, rs.Name, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if d.Spec.ProgressDeadlineSeconds != nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonRSCreateError, msg, c.now()))
			_ = c.updateStatus(ctx, d) // the create error is the one reported
		}
		c.event(d, corev1.EventTypeWarning, "FailedCreate", "%s", msg)
		return nil, fmt.Errorf("create replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if n > 0 {
		c.event(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	setDeploymentRevision(d, newRevision)
	if d.Spec.ProgressDeadlineSeconds != nil {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSCreated, msg, c.now()))
	}
	return created, c.updateStatus(ctx, d)
}

// syncExistingNewRS updates the new ReplicaSet's annotations and
// minReadySeconds (existing, the sync's own copy, is updated in place),
// and d's revision and Progressing condition.
func (c *Controller) syncExistingNewRS(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet, newRevision int64) (*appsv1.ReplicaSet, error) {
	rs := existing.DeepCopy()
	if setNewRSAnnotations(d, rs, newRevision, true) || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("update replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		// existing is the sync's own copy (claimReplicaSets): a second
		// lookup in the same sync must not write the same change again
		// with a stale resourceVersion.
		*existing = *updated
		return existing, nil
	}
	needsUpdate := setDeploymentRevision(d, revision(rs))
	if d.Spec.ProgressDeadlineSeconds != nil && condition(&d.Status, appsv1.DeploymentProgressing) == nil {
		msg := fmt.Sprintf("Found new replica set %q", rs.Name)
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonFoundNewRS, msg, c.now()))
		needsUpdate = true
	}
	if needsUpdate {
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// nameTaken handles AlreadyExists on create: the ReplicaSet is ours if it
// is d's with d's template (a stale cache), else a hash collision.
func (c *Controller) nameTaken(ctx context.Context, d *appsv1.Deployment, name string, createErr error) (*appsv1.ReplicaSet, error) {
	rs, err := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
		return rs, nil
	}
	if d.Status.CollisionCount == nil {
		d.Status.CollisionCount = new(int32)
	}
	*d.Status.CollisionCount++
	if err := c.updateStatus(ctx, d); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("replicaset name %s taken, collision count now %d: %w", name, *d.Status.CollisionCount, createErr)
}

// setDeploymentRevision sets d's revision annotation; true if changed.
func setDeploymentRevision(d *appsv1.Deployment, rev int64) bool {
	v := fmt.Sprint(rev)
	if d.Annotations[RevisionAnnotation] == v {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = v
	return true
}

// withLabel copies labels and adds the pod-template-hash.
func withLabel(labels map[string]string, hash string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[HashLabel] = hash
	return out
}

func (c *Controller) now() metav1.Time { return metav1.NewTime(c.clock.Now()) }
