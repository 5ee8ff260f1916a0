package worker

import (
	"context"
	"log/slog"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Queue is a controller's work queue of namespace/name keys: client-go's
// rate-limiting queue (its methods are Queue's) with the helpers the
// Deployment and ReplicaSet controllers share around it, so that a
// controller keeps only its event handlers and its sync function.
type Queue struct {
	workqueue.TypedRateLimitingInterface[string]
	name string
}

// NewQueue returns a queue named name (the workqueue metrics' name and the
// log prefix) with client-go's default controller rate limiter, on clk
// (nil: the real clock).
func NewQueue(name string, clk clock.WithTicker) *Queue {
	return &Queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk}),
		name: name,
	}
}

// Enqueue adds the namespace/name key of obj, an informer's object or a
// tombstone (cache.DeletedFinalStateUnknown); an object without a key is
// logged and dropped. Usable as an informer handler.
func (q *Queue) Enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		slog.Warn(q.name+" controller: no key", "err", err)
		return
	}
	q.Add(key)
}

// RunSynced waits for synced (the informers' caches), then runs n workers
// calling sync until ctx ends (Run). If ctx ends first, it shuts the queue
// down and returns without syncing. Either way the queue is shut down and
// no worker is left running when it returns.
func (q *Queue) RunSynced(ctx context.Context, synced []cache.InformerSynced, n int, sync SyncFunc) {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		q.ShutDown()
		return
	}
	Run(ctx, q, n, sync)
}

// Object returns the T an informer's handler got: obj itself, or the last
// known state a tombstone (cache.DeletedFinalStateUnknown) holds; false if
// neither is a T.
func Object[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
