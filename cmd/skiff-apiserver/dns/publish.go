package dns

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/selfservice"
)

// The Service pods reach the cluster DNS through, kubeadm's name for it,
// and its EndpointSlice (internal/selfservice keeps them).
const (
	ServiceNamespace = metav1.NamespaceSystem
	ServiceName      = "kube-dns"
	sliceName        = "kube-dns-skiff"
	managedBy        = selfservice.ManagedBy
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
