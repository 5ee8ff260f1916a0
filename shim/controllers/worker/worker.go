// Package worker runs a controller's work queue: a few workers take keys
// off a rate-limited queue and call the controller's sync function, the
// loop client-go's sample controller and kube-controller-manager's
// controllers share (Run). Queue adds the skeleton around it that the
// Deployment and ReplicaSet controllers share: the queue's construction,
// enqueueing an informer's object by key, and waiting for the informers'
// caches before the workers start (RunSynced).
package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Requeue is returned by a sync function that is not done with a key but
// did not fail: the key comes back after After, without rate-limited
// back-off and without an error logged.
type Requeue struct {
	After  time.Duration
	Reason string
}

func (r *Requeue) Error() string { return "requeue in " + r.After.String() + ": " + r.Reason }

// SyncFunc handles one key; an error other than *Requeue requeues it with
// the queue's rate limiter (back-off).
type SyncFunc func(ctx context.Context, key string) error

// Run starts n workers on q and blocks until ctx ends; it then shuts the
// queue down and returns once every worker has returned.
func Run(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], n int, syncFn SyncFunc) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for processNext(ctx, q, syncFn) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

// processNext handles one key; false once the queue is shut down.
func processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync SyncFunc) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	var requeue *Requeue
	switch {
	case err == nil:
		q.Forget(key)
	case errors.As(err, &requeue):
		q.Forget(key)
		q.AddAfter(key, requeue.After)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "sync failed", "key", key)
		q.AddRateLimited(key)
	}
	klog.FromContext(ctx).V(5).Info("synced", "key", key, "err", err)
	return true
}
