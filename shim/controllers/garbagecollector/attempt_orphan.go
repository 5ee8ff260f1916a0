package garbagecollector

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// processAttemptToOrphan handles one owner of attemptToOrphan: its
// references are removed from its dependents, then its orphan finalizer;
// on failure it is retried later. False once the queue is shut down. Safe
// to run in several goroutines.
func (gc *GarbageCollector) processAttemptToOrphan(ctx context.Context) bool {
	owner, quit := gc.attemptToOrphan.Get()
	if quit {
		return false
	}
	defer gc.attemptToOrphan.Done(owner)
	if err := gc.attemptToOrphanItem(ctx, owner); err != nil {
		gc.log.Info("garbage collector: retrying orphaning", "owner", owner.identity, "err", err)
		gc.attemptToOrphan.AddRateLimited(owner)
		return true
	}
	gc.attemptToOrphan.Forget(owner)
	return true
}

func (gc *GarbageCollector) attemptToOrphanItem(ctx context.Context, owner *node) error {
	if err := gc.orphanDependents(ctx, owner.identity, owner.getDependents()); err != nil {
		return err
	}
	return gc.removeFinalizer(ctx, owner.identity, metav1.FinalizerOrphanDependents)
}

// orphanDependents removes the references to owner from each dependent
// (one after the other; upstream patches them in parallel). A dependent
// already gone is fine; a reference already gone is a no-op patch, so it
// is idempotent.
func (gc *GarbageCollector) orphanDependents(ctx context.Context, owner objectReference, dependents []*node) error {
	var errs []error
	for _, dep := range dependents {
		smp, err := deleteOwnerRefSMP(dep.identity.UID, owner.UID)
		if err == nil {
			err = gc.patch(ctx, dep.identity, smp, deleteOwnerRefJMP(owner.UID))
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("orphan %s: %w", dep.identity, err))
		}
	}
	return errors.Join(errs...)
}
