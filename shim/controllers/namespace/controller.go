// Package namespace is the shim's namespace controller, after upstream's
// pkg/controller/namespace: for each namespace being deleted it marks it
// Terminating, deletes everything the server serves in it (found through
// discovery, so kinds added later are covered), reports progress in the
// namespace's conditions, and removes the "kubernetes" finalizer through
// namespaces/finalize, after which the server deletes the namespace.
package namespace

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/shim/controllers/worker"
)

// Defaults of Config.
const (
	// DefaultDeletionDelay is upstream's namespaceDeletionGracePeriod: a
	// deletion is handled this long after it is seen, so that creations
	// admitted just before it reach storage first.
	DefaultDeletionDelay = 5 * time.Second
	// DefaultMaxRecheck caps the wait for content that is going away (pods
	// in their grace period). Upstream waits half the longest grace period
	// (15 s for 30 s pods); the shim lists one node's namespace, which is
	// cheap, and `kubectl delete namespace` returns sooner.
	DefaultMaxRecheck = 5 * time.Second
)

// Config holds the controller's dependencies; Client, Metadata, Discover
// and Namespaces are required.
type Config struct {
	// Client gets namespaces, updates their status and finalizes them, and
	// lists pods for their grace periods.
	Client kubernetes.Interface
	// Metadata lists and deletes the content of any namespaced resource.
	Metadata metadata.Interface
	// Discover returns the server's namespaced resources (the loopback
	// discovery client's ServerPreferredNamespacedResources).
	Discover func() ([]*metav1.APIResourceList, error)
	// Namespaces is the shared namespace informer.
	Namespaces coreinformers.NamespaceInformer
	// Clock measures grace periods and drives the queue; nil: the real one.
	Clock clock.WithTicker
	// DeletionDelay and MaxRecheck: 0 means the defaults above.
	DeletionDelay, MaxRecheck time.Duration
}

// Controller empties and finalizes namespaces being deleted.
type Controller struct {
	cfg    Config
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// finalizerToken is the spec.finalizers entry this controller owns.
const finalizerToken = corev1.FinalizerKubernetes

// New returns a controller fed by cfg.Namespaces; Run starts it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Metadata == nil || cfg.Discover == nil || cfg.Namespaces == nil {
		return nil, fmt.Errorf("namespace controller: missing dependencies")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.DeletionDelay == 0 {
		cfg.DeletionDelay = DefaultDeletionDelay
	}
	if cfg.MaxRecheck == 0 {
		cfg.MaxRecheck = DefaultMaxRecheck
	}
	c := &Controller{
		cfg:    cfg,
		synced: cfg.Namespaces.Informer().HasSynced,
		// Upstream's limiter: 5 ms doubling up to a minute per namespace.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace", Clock: cfg.Clock}),
	}
	_, err := cfg.Namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("namespace controller: %w", err)
	}
	return c, nil
}

// Run syncs namespaces with the given number of workers until ctx ends,
// and returns once they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return
	}
	worker.Run(ctx, c.queue, workers, c.sync)
}

// enqueue queues a namespace being deleted, after DeletionDelay.
func (c *Controller) enqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp.IsZero() {
		return
	}
	c.queue.AddAfter(ns.Name, c.cfg.DeletionDelay)
}

// sync is upstream's namespacedResourcesDeleter.Delete for one namespace
// (pkg/controller/namespace/deletion/namespaced_resources_deleter.go), on
// the live object: nothing for a namespace not being deleted; a
// *worker.Requeue while content is going away.
func (c *Controller) sync(ctx context.Context, name string) error {
	nsClient := c.cfg.Client.CoreV1().Namespaces()
	ns, err := nsClient.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp.IsZero() {
		return nil
	}
	if ns, err = c.retryOnConflict(ctx, ns, c.markTerminating); err != nil {
		return ignoreNotFound(err)
	}
	if slices.Contains(ns.Spec.Finalizers, finalizerToken) {
		estimate, err := c.deleteAllContent(ctx, ns)
		if err != nil {
			return err
		}
		if estimate > 0 {
			return &worker.Requeue{After: min(time.Duration(estimate)*time.Second/2, c.cfg.MaxRecheck),
				Reason: fmt.Sprintf("namespace %s: content remains, estimate %d s", name, estimate)}
		}
		if _, err = c.retryOnConflict(ctx, ns, c.finalize); err != nil {
			return ignoreNotFound(err)
		}
	}
	// The orphan and foregroundDeletion finalizers of a namespace deleted
	// with those propagation policies are the garbage collector's
	// (shim/controllers/garbagecollector), as upstream.
	return nil
}

// updateFunc changes a namespace on the server and returns the result.
type updateFunc func(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error)

// retryOnConflict runs fn again on the latest namespace after a conflict,
// a few times, as long as the namespace keeps its UID.
func (c *Controller) retryOnConflict(ctx context.Context, ns *corev1.Namespace, fn updateFunc) (*corev1.Namespace, error) {
	const attempts = 5
	for i := 0; ; i++ {
		out, err := fn(ctx, ns)
		if err == nil || !apierrors.IsConflict(err) || i == attempts-1 {
			return out, err
		}
		latest, err := c.cfg.Client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, fmt.Errorf("namespace %s: UID changed across retries", ns.Name)
		}
		ns = latest
	}
}

// markTerminating sets phase Terminating if the server has not yet.
func (c *Controller) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.Status.Phase = corev1.NamespaceTerminating
	return c.cfg.Client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
}

// finalize removes finalizerToken from spec.finalizers through
// namespaces/finalize; the server deletes the namespace if no finalizer
// of either list remains.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	ns = ns.DeepCopy()
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == finalizerToken })
	klog.FromContext(ctx).V(2).Info("Finalizing namespace", "namespace", ns.Name)
	return c.cfg.Client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
