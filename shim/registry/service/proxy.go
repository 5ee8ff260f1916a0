// Package service serves services/proxy for the Services another
// package stores (skiff-apiserver's upstream strategy).
package service

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"

	"github.com/skiffnode/skiff/shim/registry/pod"
)

// ProxyREST is services/proxy: requests proxied to a ready endpoint of
// the Service that is one of the namespace's pods (upstream's service
// ProxyREST and REST.ResourceLocation, pkg/registry/core/service): the
// name is "svc", "svc:port" (a port's name or number) or
// "scheme:svc:port".
type ProxyREST struct {
	services, pods rest.Getter
	slices         rest.Lister
	transport      http.RoundTripper
}

// NewProxyREST returns services/proxy reading Services, EndpointSlices
// and pods through their storage, reaching pods through transport.
func NewProxyREST(services, pods rest.Getter, slices rest.Lister, transport http.RoundTripper) *ProxyREST {
	return &ProxyREST{services: services, pods: pods, slices: slices, transport: transport}
}

var _ rest.Connecter = &ProxyREST{}

// New implements rest.Storage.
func (r *ProxyREST) New() runtime.Object { return &corev1.ServiceProxyOptions{} }

// Destroy implements rest.Storage.
func (r *ProxyREST) Destroy() {}

// ConnectMethods implements rest.Connecter.
func (r *ProxyREST) ConnectMethods() []string { return pod.ProxyMethods() }

// NewConnectOptions implements rest.Connecter: the subpath is the path.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.ServiceProxyOptions{}, true, "path"
}

// Connect implements rest.Connecter.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.ServiceProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	loc, err := r.location(ctx, id)
	if err != nil {
		return nil, err
	}
	return pod.ProxyHandler(loc, o.Path, r.transport, responder), nil
}

// location is upstream's ResourceLocation: a port number is taken as the
// Service port's name; the endpoint is a random ready one of that port
// whose pod exists in the namespace with that IP.
func (r *ProxyREST) location(ctx context.Context, id string) (*url.URL, error) {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	if num, err := strconv.ParseInt(port, 10, 64); err == nil {
		obj, err := r.services.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		found := false
		for _, p := range obj.(*corev1.Service).Spec.Ports {
			if int64(p.Port) == num {
				port, found = p.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", num, name))
		}
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	if namespace == "" {
		return nil, apierrors.NewBadRequest("missing required namespace")
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	list, err := r.slices.List(ctx, &metainternalversion.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var slices []*discoveryv1.EndpointSlice
	for i := range list.(*discoveryv1.EndpointSliceList).Items {
		slices = append(slices, &list.(*discoveryv1.EndpointSliceList).Items[i])
	}
	if len(slices) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	hostPort, err := apiproxy.RandomEndpoint(name, slices, port, corev1.IPv4Protocol, func(ep *discoveryv1.Endpoint) bool {
		return r.isPod(ctx, namespace, ep)
	})
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: scheme, Host: hostPort}, nil
}

// isPod is upstream's isValidAddress: only addresses of the namespace's
// pods are proxied to.
func (r *ProxyREST) isPod(ctx context.Context, namespace string, ep *discoveryv1.Endpoint) bool {
	if ep.TargetRef == nil || ep.TargetRef.Namespace != namespace || len(ep.Addresses) == 0 {
		return false
	}
	obj, err := r.pods.Get(ctx, ep.TargetRef.Name, &metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, ip := range obj.(*corev1.Pod).Status.PodIPs {
		if ip.IP == ep.Addresses[0] {
			return true
		}
	}
	return false
}
