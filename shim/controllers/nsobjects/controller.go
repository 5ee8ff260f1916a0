// Package nsobjects keeps objects every namespace has on a cluster: the
// "default" ServiceAccount (upstream's serviceaccounts-controller) and the
// "kube-root-ca.crt" ConfigMap (upstream's root-ca-cert-publisher). Each is
// a Spec run by the same Controller: on a namespace's creation, and on
// the object's change or deletion, the object is created or repaired.
package nsobjects

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/shim/controllers/worker"
)

// Spec describes the object kept in every namespace.
type Spec struct {
	// Name is the object's name, and the controller's.
	Name string
	// Informer caches only the objects called Name, in all namespaces
	// (a field selector on metadata.name: the cache stays small however
	// many objects of the kind there are); the Controller runs it.
	Informer cache.SharedIndexInformer
	// Ensure creates the object in namespace ns if cached is nil, or
	// repairs cached if it differs from what it should be.
	Ensure func(ctx context.Context, ns string, cached runtime.Object) error
}

// Controller ensures one Spec in every active namespace.
type Controller struct {
	spec     Spec
	nsLister corelisters.NamespaceLister
	nsSynced cache.InformerSynced
	queue    *worker.Queue
}

// New returns a controller of spec fed by the shared namespace informer;
// clk drives the queue's back-off (nil: the real clock).
func New(spec Spec, namespaces coreinformers.NamespaceInformer, clk clock.WithTicker) (*Controller, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		spec:     spec,
		nsLister: namespaces.Lister(),
		nsSynced: namespaces.Informer().HasSynced,
		queue:    worker.NewQueue(spec.Name, clk),
	}
	_, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNamespace,
		UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s controller: %w", spec.Name, err)
	}
	_, err = spec.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueObject,
		UpdateFunc: func(_, obj any) { c.enqueueObject(obj) },
		DeleteFunc: c.enqueueObject,
	})
	if err != nil {
		return nil, fmt.Errorf("%s controller: %w", spec.Name, err)
	}
	return c, nil
}

// Run runs the object informer and the workers until ctx ends, and
// returns once they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg wait.Group
	defer wg.Wait()
	wg.StartWithContext(ctx, c.spec.Informer.RunWithContext)
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.nsSynced, c.spec.Informer.HasSynced) {
		return
	}
	worker.Run(ctx, c.queue, workers, c.sync)
}

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) enqueueObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetName() == c.spec.Name {
		c.queue.Add(m.GetNamespace())
	}
}

// sync ensures the object in namespace ns if ns is active. Namespaces
// gone or terminating meanwhile are no error (the create is refused with
// 404 or 403 NamespaceTerminating), nor is a create that lost a race
// (the informer's event brings the namespace back).
func (c *Controller) sync(ctx context.Context, ns string) error {
	n, err := c.nsLister.Get(ns)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Status.Phase != corev1.NamespaceActive {
		return nil
	}
	var cached runtime.Object
	item, exists, err := c.spec.Informer.GetIndexer().GetByKey(ns + "/" + c.spec.Name)
	if err != nil {
		return err
	}
	if exists {
		cached = item.(runtime.Object)
	}
	err = c.spec.Ensure(ctx, ns, cached)
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s in namespace %s: %w", c.spec.Name, ns, err)
	}
	return nil
}

// nameSelector restricts an informer to objects called name.
func nameSelector(name string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// namespaceIndexers are the indexers of the object informers.
func namespaceIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}
