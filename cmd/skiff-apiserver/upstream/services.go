package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1internal "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/discovery"
	discoveryv1internal "k8s.io/kubernetes/pkg/apis/discovery/v1"
	endpointsregistry "k8s.io/kubernetes/pkg/registry/core/endpoint"
	svcregistry "k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	svcstorage "k8s.io/kubernetes/pkg/registry/core/service/storage"
	endpointsliceregistry "k8s.io/kubernetes/pkg/registry/discovery/endpointslice"
	netutils "k8s.io/utils/net"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// Defaults of the service flags: kubeadm's service subnet and
// kube-apiserver's --service-node-port-range.
const (
	DefaultServiceCIDR   = "10.96.0.0/12"
	DefaultNodePortRange = "30000-32767"
)

// repairWait bounds how long a Service delete waits for the allocators'
// repair before it releases what it held (a release before the repair is
// undone by it).
const repairWait = 30 * time.Second

// addCoreToScheme registers core's and discovery's internal types and the
// v1 conversions and defaults in s.
func addCoreToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{api.AddToScheme, corev1internal.AddToScheme, discovery.AddToScheme, discoveryv1internal.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// addServiceDefaults registers upstream's defaulting of Services,
// Endpoints and EndpointSlices in s (the shim's scheme), and of no other
// kind: the shim defaults its own pods.
func addServiceDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&corev1.Service{}, func(obj any) { corev1internal.SetObjectDefaults_Service(obj.(*corev1.Service)) })
	s.AddTypeDefaultingFunc(&corev1.ServiceList{}, func(obj any) { corev1internal.SetObjectDefaults_ServiceList(obj.(*corev1.ServiceList)) })
	//nolint:staticcheck // core/v1 Endpoints are deprecated, and served as by kube-apiserver 1.37
	s.AddTypeDefaultingFunc(&corev1.Endpoints{}, func(obj any) { corev1internal.SetObjectDefaults_Endpoints(obj.(*corev1.Endpoints)) })
	s.AddTypeDefaultingFunc(&corev1.EndpointsList{}, func(obj any) { corev1internal.SetObjectDefaults_EndpointsList(obj.(*corev1.EndpointsList)) })
	s.AddTypeDefaultingFunc(&discoveryv1.EndpointSlice{}, func(obj any) { discoveryv1internal.SetObjectDefaults_EndpointSlice(obj.(*discoveryv1.EndpointSlice)) })
	s.AddTypeDefaultingFunc(&discoveryv1.EndpointSliceList{}, func(obj any) {
		discoveryv1internal.SetObjectDefaults_EndpointSliceList(obj.(*discoveryv1.EndpointSliceList))
	})
}

// serviceAllocators are the cluster IPs (one IPv4 range) and node ports
// the Services hold: in memory, as upstream's bitmaps, filled from the
// stored Services by repair once the server serves. Until then (ready
// open) every allocation waits.
type serviceAllocators struct {
	ips   *ipallocator.Range
	ports *portallocator.PortAllocator
	ready chan struct{}
}

// newServiceAllocators returns allocators of cidr (IPv4) and the port
// range ports ("30000-32767").
func newServiceAllocators(cidr, ports string) (*serviceAllocators, error) {
	_, ipNet, err := netutils.ParseCIDRSloppy(cidr)
	if err != nil {
		return nil, fmt.Errorf("service cluster IP range %q: %w", cidr, err)
	}
	if !netutils.IsIPv4CIDR(ipNet) {
		return nil, fmt.Errorf("service cluster IP range %q: only IPv4 is served", cidr)
	}
	pr, err := utilnet.ParsePortRange(ports)
	if err != nil {
		return nil, fmt.Errorf("service node port range %q: %w", ports, err)
	}
	ips, err := ipallocator.NewInMemory(ipNet)
	if err != nil {
		return nil, fmt.Errorf("service cluster IP range %q: %w", cidr, err)
	}
	portAlloc, err := portallocator.NewInMemory(*pr)
	if err != nil {
		return nil, fmt.Errorf("service node port range %q: %w", ports, err)
	}
	return &serviceAllocators{ips: ips, ports: portAlloc, ready: make(chan struct{})}, nil
}

// wait returns once repair has filled the allocators, or ctx's error.
func (a *serviceAllocators) wait(ctx context.Context) error {
	select {
	case <-a.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("service allocators not yet repaired: %w", ctx.Err())
	}
}

// repair marks every cluster IP and node port of the stored Services
// allocated, listing them through client until that succeeds or ctx ends,
// then lets allocations through. An address or port outside the ranges
// (the flags changed) is logged and left.
func (a *serviceAllocators) repair(ctx context.Context, client kubernetes.Interface) {
	var list *corev1.ServiceList
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		list, err = client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Listing services for the allocators' repair")
		}
		return err == nil, nil
	})
	if err != nil {
		return
	}
	for i := range list.Items {
		a.mark(ctx, &list.Items[i])
	}
	close(a.ready)
}

// mark allocates svc's cluster IPs and node ports.
func (a *serviceAllocators) mark(ctx context.Context, svc *corev1.Service) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	for _, ip := range svc.Spec.ClusterIPs {
		if parsed := netutils.ParseIPSloppy(ip); parsed != nil && parsed.To4() != nil {
			if err := a.ips.Allocate(parsed); err != nil {
				logger.Error(err, "Service cluster IP not allocated by the repair", "ip", ip)
			}
		}
	}
	ports := []int32{svc.Spec.HealthCheckNodePort}
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.NodePort)
	}
	for _, p := range ports {
		if p == 0 {
			continue
		}
		if err := a.ports.Allocate(int(p)); err != nil && !errors.Is(err, portallocator.ErrAllocated) {
			logger.Error(err, "Service node port not allocated by the repair", "port", p)
		}
	}
}

// services is core/v1 Services with upstream's strategy and upstream's
// allocation of cluster IPs and node ports (the hooks of its storage,
// pkg/registry/core/service/storage, on a Store without storage of its
// own), on the allocators a.
func services(c converter, a *serviceAllocators) (*generic.Kind, error) {
	up, _, _, err := svcstorage.NewREST(noStorage{}, api.IPv4Protocol,
		map[api.IPFamily]ipallocator.Interface{api.IPv4Protocol: a.ips}, a.ports, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("upstream service storage: %w", err)
	}
	k := c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "services", Singular: "service", Namespaced: true,
		New:        func() runtime.Object { return &corev1.Service{} },
		NewList:    func() runtime.Object { return &corev1.ServiceList{} },
		ShortNames: []string{"svc"},
		Categories: []string{"all"},
		Status:     true,
		Fields: func(obj runtime.Object) fields.Set {
			svc := obj.(*corev1.Service)
			return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
		},
	}, svcregistry.Strategy, svcregistry.StatusStrategy)
	k.StoreHooks = func(main, status *genericregistry.Store) {
		main.BeginCreate = c.beginCreate(a, up.Store)
		main.BeginUpdate = c.beginUpdate(a, up.Store)
		main.AfterDelete = c.afterDelete(a, up.AfterDelete)
		// As upstream: a status patch may remove the last finalizer.
		status.AfterDelete = main.AfterDelete
	}
	return k, nil
}

// beginCreate runs up's BeginCreate (the allocations) and then its
// Decorator (what upstream sets on read) on obj converted to internal,
// once a is repaired.
func (c converter) beginCreate(a *serviceAllocators, up *genericregistry.Store) genericregistry.BeginCreateFunc {
	return func(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
		if err := a.wait(ctx); err != nil {
			return nil, err
		}
		in, err := c.internal(obj)
		if err != nil {
			return nil, err
		}
		finish, err := up.BeginCreate(ctx, in, options)
		if err != nil {
			return nil, err
		}
		return c.decorated(ctx, up, in, obj, finish)
	}
}

// beginUpdate is beginCreate for updates.
func (c converter) beginUpdate(a *serviceAllocators, up *genericregistry.Store) genericregistry.BeginUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
		if err := a.wait(ctx); err != nil {
			return nil, err
		}
		in, err := c.internal(obj)
		if err != nil {
			return nil, err
		}
		oldIn, err := c.internal(old)
		if err != nil {
			return nil, err
		}
		finish, err := up.BeginUpdate(ctx, in, oldIn, options)
		if err != nil {
			return nil, err
		}
		return c.decorated(ctx, up, in, obj, finish)
	}
}

// decorated applies up's Decorator to in and writes it to obj; on failure
// it reverts the allocations (finish).
func (c converter) decorated(ctx context.Context, up *genericregistry.Store, in, obj runtime.Object, finish genericregistry.FinishFunc) (genericregistry.FinishFunc, error) {
	if up.Decorator != nil {
		up.Decorator(in)
	}
	if err := c.setExternal(in, obj); err != nil {
		finish(ctx, false)
		return nil, err
	}
	return finish, nil
}

// afterDelete runs up (the releases) on obj converted to internal, after
// a's repair or repairWait.
func (c converter) afterDelete(a *serviceAllocators, up genericregistry.AfterDeleteFunc) genericregistry.AfterDeleteFunc {
	return func(obj runtime.Object, options *metav1.DeleteOptions) {
		ctx, cancel := context.WithTimeout(context.Background(), repairWait)
		defer cancel()
		_ = a.wait(ctx)
		if in, err := c.internal(obj); err == nil {
			up(in, options)
		}
	}
}

// endpoints is core/v1 Endpoints with upstream's strategy.
func endpoints(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "endpoints", Singular: "endpoints", Namespaced: true,
		New: func() runtime.Object { return &corev1.Endpoints{} }, //nolint:staticcheck // deprecated, served as upstream

		NewList:    func() runtime.Object { return &corev1.EndpointsList{} },
		ShortNames: []string{"ep"},
	}, endpointsregistry.Strategy, nil)
}

// endpointSlices is discovery.k8s.io/v1 EndpointSlices with upstream's
// strategy.
func endpointSlices(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: discoveryv1.GroupName, Version: "v1", Resource: "endpointslices", Singular: "endpointslice", Namespaced: true,
		New:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
	}, endpointsliceregistry.Strategy, nil)
}

// noStorage completes upstream's Service Store, whose hooks alone serve:
// it has no storage.
type noStorage struct{}

// GetRESTOptions implements genericregistry's RESTOptionsGetter.
func (noStorage) GetRESTOptions(schema.GroupResource, runtime.Object) (genericoptions.RESTOptions, error) {
	return genericoptions.RESTOptions{
		StorageConfig: &storagebackend.ConfigForResource{},
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object,
			func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
		ResourcePrefix: "/services",
	}, nil
}
