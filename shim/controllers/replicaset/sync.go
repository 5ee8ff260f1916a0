package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/controllers/controllerref"
	"github.com/skiffnode/skiff/shim/controllers/worker"
)

// sync is upstream's syncReplicaSet: claim the active pods, create or
// delete pods unless earlier creations/deletions are still unseen, then
// write the status. A ReplicaSet being deleted only gets its status.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	needsSync := c.expectations.satisfied(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil // validation refuses it; nothing to retry
	}
	all, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	for _, p := range all {
		if isActive(p) {
			active = append(active, p)
		}
	}
	pods, err := controllerref.Claim(ctx, c.claimer(rs, selector), active)
	if err != nil {
		return err
	}
	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, pods, rs)
	}
	st := calculateStatus(rs, pods, manageErr, c.clock.Now())
	updated, err := c.updateStatus(ctx, rs, st)
	if err != nil {
		return errors.Join(manageErr, err)
	}
	if manageErr != nil {
		return manageErr
	}
	if m := updated.Spec.MinReadySeconds; m > 0 && updated.Status.ReadyReplicas == ptr.Deref(updated.Spec.Replicas, 1) &&
		updated.Status.AvailableReplicas != updated.Status.ReadyReplicas {
		return &worker.Requeue{After: time.Duration(m) * time.Second, Reason: "pods not available yet"}
	}
	return nil
}

// claimer claims pods for rs (adoption rechecks rs with a live read).
func (c *Controller) claimer(rs *appsv1.ReplicaSet, selector labels.Selector) *controllerref.Claimer {
	return &controllerref.Claimer{
		Owner: rs, OwnerKind: controllerKind, Selector: selector,
		CanAdopt: controllerref.RecheckOwner(rs.UID, func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		}),
		Patch: func(ctx context.Context, name string, patch []byte) error {
			_, err := c.client.CoreV1().Pods(rs.Namespace).Patch(ctx, name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{})
			return err
		},
	}
}

// manageReplicas creates or deletes the difference between the claimed
// pods and spec.replicas (at most burstReplicas at a time), recording
// expectations first.
func (c *Controller) manageReplicas(ctx context.Context, pods []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	key := rsKey(rs)
	diff := len(pods) - int(ptr.Deref(rs.Spec.Replicas, 1))
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		c.expectations.expectCreations(key, n)
		done, err := slowStartBatch(n, func() error { return c.createPod(ctx, rs) })
		for range n - done {
			c.expectations.creationObserved(key) // never coming
		}
		return err
	case diff > 0:
		victims := podsToDelete(pods, min(diff, burstReplicas))
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = p.Namespace + "/" + p.Name
		}
		c.expectations.expectDeletions(key, keys)
		return c.deletePods(ctx, rs, victims)
	}
	return nil
}

// createPod creates one pod from rs's template.
func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, podFromTemplate(rs), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // upstream: the namespace is going, nothing to do
		}
		c.event(rs, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return fmt.Errorf("create pod for %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	c.event(rs, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", pod.Name)
	return nil
}

// deletePods deletes victims concurrently; a deletion that failed is no
// longer expected.
func (c *Controller) deletePods(ctx context.Context, rs *appsv1.ReplicaSet, victims []*corev1.Pod) error {
	errs := make([]error, len(victims))
	var wg sync.WaitGroup
	for i, p := range victims {
		wg.Go(func() {
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
			if err == nil {
				c.event(rs, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
				return
			}
			c.expectations.deletionObserved(rsKey(rs), p.Namespace+"/"+p.Name)
			if !apierrors.IsNotFound(err) {
				c.event(rs, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				errs[i] = fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// slowStartBatch is upstream's: calls fn in batches of 1, 2, 4, ...
// concurrently, stopping after a batch with an error; it returns the
// number of successful calls.
func slowStartBatch(count int, fn func() error) (int, error) {
	done := 0
	for batch := 1; count > 0; batch *= 2 {
		batch = min(batch, count)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			wg.Go(func() { errs[i] = fn() })
		}
		wg.Wait()
		count -= batch
		for _, err := range errs {
			if err == nil {
				done++
			}
		}
		if err := errors.Join(errs...); err != nil {
			return done, err
		}
	}
	return done, nil
}

// updateStatus writes st with observedGeneration unless nothing changed
// (upstream's updateReplicaSetStatus), retrying once on a conflict with a
// fresh read.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	st.ObservedGeneration = rs.Generation
	if equality.Semantic.DeepEqual(rs.Status, st) {
		return rs, nil
	}
	client := c.client.AppsV1().ReplicaSets(rs.Namespace)
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		cp := rs.DeepCopy()
		cp.Status = st
		var updated *appsv1.ReplicaSet
		if updated, err = client.UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) {
			break
		}
		if rs, err = client.Get(ctx, rs.Name, metav1.GetOptions{}); err != nil {
			break
		}
		st.ObservedGeneration = rs.Generation
	}
	return nil, fmt.Errorf("update status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
}

func (c *Controller) event(rs *appsv1.ReplicaSet, typ, reason, format string, args ...any) {
	if c.recorder != nil {
		c.recorder.Eventf(rs, typ, reason, format, args...)
	}
}

func secondsPlusOne(s int32) time.Duration { return time.Duration(s)*time.Second + time.Second }
