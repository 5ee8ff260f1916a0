// Package apiservice publishes the API to the node's pods as
// kube-apiserver does: the Service default/kubernetes at the first
// address of the service range, port 443, and its EndpointSlice at the
// node's address and the API's port (and the Endpoints beside it), where skiff-apiserver then also
// listens, answering only the pods' networks, the node's address and
// loopback (decision 117).
package apiservice

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/selfservice"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/nodeip"
	"github.com/skiffnode/skiff/shim/server"
)

// The Service, kube-apiserver's, and its EndpointSlice.
const (
	ServiceName = "kubernetes"
	servicePort = 443
	portName    = "https"
)

// listenRetry is how long after a failure to listen on the node's
// address (its port taken) it is tried again.
const listenRetry = 10 * time.Second

// republishEvery is how often the Service and slice are checked and put
// back, as kube-apiserver's reconciler does.
const republishEvery = time.Minute

// Config is the kubernetes Service of one node.
type Config struct {
	// NodeName is the node whose IPv4 address the Service's endpoint is.
	NodeName string
	// ServiceCIDR is the service range: the Service takes its first
	// address.
	ServiceCIDR netip.Prefix
	// BindAddress and Port are where the API listens; unless BindAddress
	// is unspecified or the node's, it also listens on the node's address
	// and Port.
	BindAddress string
	Port        int
	// Clients are the pods' networks, which may connect on the node's
	// address besides the node itself and loopback.
	Clients []netip.Prefix
}

// ServiceIP is the first address of cidr, the kubernetes Service's.
func ServiceIP(cidr netip.Prefix) netip.Addr { return cidr.Masked().Addr().Next() }

// Runs returns the run function for server.Options.Controllers, built on
// cc's informers now: once the Node has an address, it listens there
// (through cc.Listen) and publishes the Service and slice, again whenever
// they change and every minute, until ctx ends.
// Without a port of its own (Port 0: any free one) there is nothing to
// publish: it returns none.
func Runs(cc server.ControllerContext, cfg Config) []func(context.Context) {
	if cfg.Port == 0 {
		return nil
	}
	core := cc.Informers.Core().V1()
	services, eps, nodes := core.Services(), cc.Informers.Discovery().V1().EndpointSlices(), core.Nodes()
	key := metav1.NamespaceDefault + "/" + ServiceName
	changed, synced := selfservice.Notify([]string{key}, services.Informer(), eps.Informer())
	synced = append(synced, nodes.Informer().HasSynced)
	p := &selfservice.Publisher{Client: cc.Client, What: "the API's Service",
		Service: func() (*corev1.Service, error) {
			return selfservice.NotFoundNil(services.Lister().Services(metav1.NamespaceDefault).Get(ServiceName))
		},
		Slice: func() (*discoveryv1.EndpointSlice, error) {
			return selfservice.NotFoundNil(eps.Lister().EndpointSlices(metav1.NamespaceDefault).Get(ServiceName))
		},
		// Read live: an Endpoints informer would cache every Service's.
		Endpoints: func(ctx context.Context) (*corev1.Endpoints, error) { //nolint:staticcheck // kube-apiserver keeps them
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return selfservice.NotFoundNil(cc.Client.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, ServiceName, metav1.GetOptions{}))
		},
	}
	return []func(context.Context){func(ctx context.Context) {
		logger := klog.FromContext(ctx).WithName("kubernetes-service")
		ctx = klog.NewContext(ctx, logger)
		node, err := nodeip.WaitSynced(ctx, synced, cfg.NodeName, nodes.Lister().Get)
		if err != nil {
			logger.Error(err, "The kubernetes Service is not published")
			return
		}
		// The Service points pods at the node's address only once the
		// API listens there, never at whatever else holds the port.
		for err := listen(cfg, node, cc.Listen); err != nil; err = listen(cfg, node, cc.Listen) {
			logger.Error(err, "The kubernetes Service is not published; retrying", "retry", listenRetry)
			select {
			case <-ctx.Done():
				return
			case <-time.After(listenRetry):
			}
		}
		logger.Info("Publishing the kubernetes Service", "clusterIP", ServiceIP(cfg.ServiceCIDR), "endpoint", net.JoinHostPort(node.String(), strconv.Itoa(cfg.Port)))
		p.Loop(ctx, selfservice.Want{Service: service(ServiceIP(cfg.ServiceCIDR), cfg.Port), Slice: slice(cfg.NodeName, node, cfg.Port),
			Endpoints: endpoints(node, cfg.Port)}, changed, republishEvery)
	}}
}

// listen has the API listen on node's address too, for cfg.Clients, the
// node and loopback, unless it listens there already.
func listen(cfg Config, node netip.Addr, serve func(net.Listener)) error {
	if b, err := netip.ParseAddr(cfg.BindAddress); err == nil && (b.IsUnspecified() || b == node) {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(node.String(), strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen on the node's address: %w", err)
	}
	allowed := nodeip.Clients(cfg.Clients, node)
	serve(&filtered{Listener: ln, allowed: allowed})
	return nil
}

// service is kube-apiserver's kubernetes Service at ip, port 443 to the
// API's port, without a selector.
func service(ip netip.Addr, port int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: ServiceName, Labels: map[string]string{
			"component": "apiserver", "provider": "kubernetes", "app.kubernetes.io/managed-by": selfservice.ManagedBy,
		}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip.String(), ClusterIPs: []string{ip.String()},
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports:           []corev1.ServicePort{{Name: portName, Protocol: corev1.ProtocolTCP, Port: servicePort, TargetPort: intstr.FromInt(port)}},
		},
	}
}

// slice is the kubernetes EndpointSlice: the API at node's address and
// port, ready.
func slice(nodeName string, node netip.Addr, port int) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: ServiceName, Labels: map[string]string{
			discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: selfservice.ManagedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{node.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(nodeName),
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(portName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(port))}},
	}
}

// endpoints are the kubernetes Endpoints, as kube-apiserver's reconciler
// keeps them beside the slice (its label tells the mirroring controller
// to leave them).
func endpoints(node netip.Addr, port int) *corev1.Endpoints { //nolint:staticcheck // kube-apiserver keeps them
	return &corev1.Endpoints{ //nolint:staticcheck // as above
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: ServiceName, Labels: map[string]string{
			discoveryv1.LabelSkipMirror: "true", "app.kubernetes.io/managed-by": selfservice.ManagedBy,
		}},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: node.String()}},
			Ports:     []corev1.EndpointPort{{Name: portName, Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}
}

// filtered is a listener that closes, at once, connections from outside
// allowed.
type filtered struct {
	net.Listener
	allowed []netip.Prefix
}

func (f *filtered) Accept() (net.Conn, error) {
	for {
		c, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if f.allows(c.RemoteAddr()) {
			return c, nil
		}
		klog.V(2).InfoS("Refused a connection to the API on the node's address", "client", c.RemoteAddr())
		_ = c.Close()
	}
}

func (f *filtered) allows(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range f.allowed {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
