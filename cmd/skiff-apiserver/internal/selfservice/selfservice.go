// Package selfservice keeps a Service that skiff-apiserver serves itself
// (the cluster DNS's kube-dns, the API's kubernetes) and its one
// EndpointSlice as they should be: selectorless, so that upstream's
// EndpointSlice controller leaves them to their manager, and put back
// after a delete or an edit, as an addon manager would.
package selfservice

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ManagedBy is the value of the label app.kubernetes.io/managed-by (on
// the Service) and endpointslice.kubernetes.io/managed-by (on the slice)
// that marks them skiff-apiserver's.
const ManagedBy = "skiff-apiserver"

// serviceManagedBy is the Service's label.
const serviceManagedBy = "app.kubernetes.io/managed-by"

// Action is one write Publish makes.
type Action int

const (
	Keep Action = iota
	Create
	Update
	Recreate // a cluster IP cannot change: delete, then create
	Foreign  // someone else's object of that name: leave it
)

// PlanService says what makes current (nil: none) the wanted Service.
func PlanService(current, want *corev1.Service) Action {
	switch {
	case current == nil:
		return Create
	case current.Labels[serviceManagedBy] != ManagedBy:
		return Foreign
	case current.Spec.ClusterIP != want.Spec.ClusterIP:
		return Recreate
	case !apiequality.Semantic.DeepEqual(current.Spec.Ports, want.Spec.Ports) || current.Spec.Selector != nil:
		return Update
	}
	return Keep
}

// PlanSlice says what makes current (nil: none) the wanted EndpointSlice.
func PlanSlice(current, want *discoveryv1.EndpointSlice) Action {
	switch {
	case current == nil:
		return Create
	case current.Labels[discoveryv1.LabelManagedBy] != ManagedBy:
		return Foreign
	case !apiequality.Semantic.DeepEqual(current.Endpoints, want.Endpoints) || !apiequality.Semantic.DeepEqual(current.Ports, want.Ports) ||
		current.Labels[discoveryv1.LabelServiceName] != want.Labels[discoveryv1.LabelServiceName]:
		return Update
	}
	return Keep
}

// PlanEndpoints says what makes current (nil: none) the wanted Endpoints.
func PlanEndpoints(current, want *corev1.Endpoints) Action { //nolint:staticcheck // the Endpoints kube-apiserver keeps beside its slice
	switch {
	case current == nil:
		return Create
	case current.Labels[serviceManagedBy] != ManagedBy:
		return Foreign
	case !apiequality.Semantic.DeepEqual(current.Subsets, want.Subsets) || !apiequality.Semantic.DeepEqual(current.Labels, want.Labels):
		return Update
	}
	return Keep
}

// Want are the objects Publish makes: a Service, its EndpointSlice and,
// when not nil, its Endpoints (which should carry the label
// endpointslice.kubernetes.io/skip-mirror, or the mirroring controller
// makes a second slice of them).
type Want struct {
	Service   *corev1.Service
	Slice     *discoveryv1.EndpointSlice
	Endpoints *corev1.Endpoints //nolint:staticcheck // as PlanEndpoints
}

// Publisher writes one Service, its EndpointSlice and its Endpoints.
type Publisher struct {
	Client kubernetes.Interface
	// What names the Service's purpose in errors ("cluster DNS").
	What string
	// Service, Slice and Endpoints return the current objects (nil if
	// none); Endpoints is needed only when Want.Endpoints is set.
	Service   func() (*corev1.Service, error)
	Slice     func() (*discoveryv1.EndpointSlice, error)
	Endpoints func(ctx context.Context) (*corev1.Endpoints, error) //nolint:staticcheck // as PlanEndpoints
}

// Publish makes the objects those of w; an object of that name that
// skiff-apiserver did not make is an error, and left as it is (and the
// others are not published then).
func (p *Publisher) Publish(ctx context.Context, w Want) error {
	want := w.Service
	ns, name := want.Namespace, want.Name
	services := p.Client.CoreV1().Services(ns)
	cur, err := p.Service()
	if err != nil {
		return err
	}
	switch PlanService(cur, want) {
	case Foreign:
		return fmt.Errorf("the Service %s/%s exists and is not skiff-apiserver's (label %s): %s not published", ns, name, serviceManagedBy, p.What)
	case Recreate:
		if err := services.Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(cur.UID))}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Service %s/%s: delete for its new cluster IP: %w", ns, name, err)
		}
		fallthrough
	case Create:
		if _, err := services.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("the Service %s/%s: %w", ns, name, err)
		}
	case Update:
		next := cur.DeepCopy()
		next.Spec.Ports, next.Spec.Selector = want.Spec.Ports, nil
		if _, err := services.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("the Service %s/%s: %w", ns, name, err)
		}
	}
	if err := p.publishSlice(ctx, w.Slice); err != nil {
		return err
	}
	if w.Endpoints == nil {
		return nil
	}
	return p.publishEndpoints(ctx, w.Endpoints)
}

func (p *Publisher) publishEndpoints(ctx context.Context, want *corev1.Endpoints) error { //nolint:staticcheck // as PlanEndpoints
	endpoints := p.Client.CoreV1().Endpoints(want.Namespace)
	cur, err := p.Endpoints(ctx)
	if err != nil {
		return err
	}
	switch PlanEndpoints(cur, want) {
	case Foreign:
		return fmt.Errorf("the Endpoints %s/%s exist and are not skiff-apiserver's (label %s): %s not published", want.Namespace, want.Name, serviceManagedBy, p.What)
	case Create:
		_, err = endpoints.Create(ctx, want, metav1.CreateOptions{})
	case Update:
		next := cur.DeepCopy()
		next.Labels, next.Subsets = want.Labels, want.Subsets
		_, err = endpoints.Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("the Endpoints %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

func (p *Publisher) publishSlice(ctx context.Context, want *discoveryv1.EndpointSlice) error {
	slices := p.Client.DiscoveryV1().EndpointSlices(want.Namespace)
	cur, err := p.Slice()
	if err != nil {
		return err
	}
	switch PlanSlice(cur, want) {
	case Foreign:
		return fmt.Errorf("the EndpointSlice %s/%s exists and is not skiff-apiserver's (label %s): %s not published", want.Namespace, want.Name, discoveryv1.LabelManagedBy, p.What)
	case Create:
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
	case Update:
		next := cur.DeepCopy()
		next.Labels, next.Endpoints, next.Ports = want.Labels, want.Endpoints, want.Ports
		_, err = slices.Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("the EndpointSlice %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// Loop publishes at once, then on each signal of changed and every
// every, until ctx ends; errors are logged.
func (p *Publisher) Loop(ctx context.Context, w Want, changed <-chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := p.Publish(ctx, w); err != nil {
			klog.FromContext(ctx).Error(err, "Publish a Service", "service", w.Service.Namespace+"/"+w.Service.Name)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// Notify returns a channel signalled (one pending signal at most) when an
// object of one of keys ("namespace/name") is updated or deleted in
// informers, and the informers' HasSynced. The handlers' registrations
// are never removed.
func Notify(keys []string, informers ...cache.SharedIndexInformer) (<-chan struct{}, []cache.InformerSynced) {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	h := cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			for _, k := range keys {
				if key == k {
					return true
				}
			}
			return false
		},
		Handler: cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, _ any) { poke() },
			DeleteFunc: func(any) { poke() },
		},
	}
	var synced []cache.InformerSynced
	for _, inf := range informers {
		_, _ = inf.AddEventHandler(h)
		synced = append(synced, inf.HasSynced)
	}
	return changed, synced
}

// NotFoundNil is (v, err) with a NotFound error as (nil, nil).
func NotFoundNil[T any](v *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return v, err
}
