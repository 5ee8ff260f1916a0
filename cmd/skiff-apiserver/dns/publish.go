package dns

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The Service pods reach the cluster DNS through, kubeadm's name for it,
// and its EndpointSlice: selectorless, so that upstream's EndpointSlice
// controller leaves it to its manager, skiff-apiserver.
const (
	ServiceNamespace = metav1.NamespaceSystem
	ServiceName      = "kube-dns"
	sliceName        = "kube-dns-skiff"
	managedBy        = "skiff-apiserver"
)

// service is the kube-dns Service at ip: dns (UDP) and dns-tcp (TCP) on
// port 53, as kubeadm's, without a selector.
func service(ip netip.Addr) *corev1.Service {
	port := func(name string, p corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Protocol: p, Port: 53, TargetPort: intstr.FromInt32(53)}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "KubeDNS",
			"app.kubernetes.io/managed-by": managedBy,
		}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip.String(), ClusterIPs: []string{ip.String()},
			Ports: []corev1.ServicePort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
		},
	}
}

// slice is the kube-dns EndpointSlice: the server at node's address and
// port, ready.
func slice(nodeName string, node netip.Addr, port int) *discoveryv1.EndpointSlice {
	p := func(name string, proto corev1.Protocol) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(int32(port))}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: sliceName, Labels: map[string]string{
			discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: managedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{node.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(nodeName),
		}},
		Ports: []discoveryv1.EndpointPort{p("dns", corev1.ProtocolUDP), p("dns-tcp", corev1.ProtocolTCP)},
	}
}

// action is one write publish makes.
type action int

const (
	keep action = iota
	create
	update
	recreate // a cluster IP cannot change: delete, then create
	foreign  // someone else's object of that name: leave it
)

// planService says what makes current (nil: none) the wanted Service.
func planService(current, want *corev1.Service) action {
	switch {
	case current == nil:
		return create
	case current.Labels["app.kubernetes.io/managed-by"] != managedBy:
		return foreign
	case current.Spec.ClusterIP != want.Spec.ClusterIP:
		return recreate
	case !apiequality.Semantic.DeepEqual(current.Spec.Ports, want.Spec.Ports) || current.Spec.Selector != nil:
		return update
	}
	return keep
}

// planSlice says what makes current (nil: none) the wanted EndpointSlice.
func planSlice(current, want *discoveryv1.EndpointSlice) action {
	switch {
	case current == nil:
		return create
	case current.Labels[discoveryv1.LabelManagedBy] != managedBy:
		return foreign
	case !apiequality.Semantic.DeepEqual(current.Endpoints, want.Endpoints) || !apiequality.Semantic.DeepEqual(current.Ports, want.Ports) ||
		current.Labels[discoveryv1.LabelServiceName] != ServiceName:
		return update
	}
	return keep
}

// publisher writes the kube-dns Service and EndpointSlice.
type publisher struct {
	client  kubernetes.Interface
	service func() (*corev1.Service, error)            // the current one, nil if none
	slice   func() (*discoveryv1.EndpointSlice, error) // the current one, nil if none
}

// publish makes the kube-dns Service and EndpointSlice those of want and
// wantSlice; an object of that name that skiff-apiserver did not make is
// an error, and left as it is.
func (p *publisher) publish(ctx context.Context, want *corev1.Service, wantSlice *discoveryv1.EndpointSlice) error {
	services := p.client.CoreV1().Services(ServiceNamespace)
	cur, err := p.service()
	if err != nil {
		return err
	}
	switch planService(cur, want) {
	case foreign:
		return fmt.Errorf("Service %s/%s exists and is not skiff-apiserver's (label app.kubernetes.io/managed-by): cluster DNS not published", ServiceNamespace, ServiceName)
	case recreate:
		if err := services.Delete(ctx, ServiceName, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(cur.UID))}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("Service %s/%s: delete for its new cluster IP: %w", ServiceNamespace, ServiceName, err)
		}
		fallthrough
	case create:
		if _, err := services.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("Service %s/%s: %w", ServiceNamespace, ServiceName, err)
		}
	case update:
		next := cur.DeepCopy()
		next.Spec.Ports, next.Spec.Selector = want.Spec.Ports, nil
		if _, err := services.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("Service %s/%s: %w", ServiceNamespace, ServiceName, err)
		}
	}
	slices := p.client.DiscoveryV1().EndpointSlices(ServiceNamespace)
	curSlice, err := p.slice()
	if err != nil {
		return err
	}
	switch planSlice(curSlice, wantSlice) {
	case foreign:
		return fmt.Errorf("EndpointSlice %s/%s exists and is not skiff-apiserver's (label %s): cluster DNS not published", ServiceNamespace, sliceName, discoveryv1.LabelManagedBy)
	case create:
		_, err = slices.Create(ctx, wantSlice, metav1.CreateOptions{})
	case update:
		next := curSlice.DeepCopy()
		next.Labels, next.Endpoints, next.Ports = wantSlice.Labels, wantSlice.Endpoints, wantSlice.Ports
		_, err = slices.Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("EndpointSlice %s/%s: %w", ServiceNamespace, sliceName, err)
	}
	return nil
}
