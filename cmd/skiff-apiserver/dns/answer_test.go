package dns

import (
	"strconv"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fakeSource is a Source of fixed objects.
type fakeSource struct {
	services []*corev1.Service
	slices   []*discoveryv1.EndpointSlice
}

func (f fakeSource) Service(namespace, name string) *corev1.Service {
	for _, s := range f.services {
		if s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}

func (f fakeSource) EndpointSlices(namespace, service string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range f.slices {
		if s.Namespace == namespace && s.Labels[discoveryv1.LabelServiceName] == service {
			out = append(out, s)
		}
	}
	return out
}

func (f fakeSource) Services() []*corev1.Service { return f.services }

func svc(name, clusterIP string, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func endpointSlice(service string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: service + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

func ep(ip, host string, ready bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
	if host != "" {
		e.Hostname = &host
	}
	return e
}

// TestAnswer: the names of the Kubernetes DNS specification, each with
// its records, the empty answers and the names that do not exist.
func TestAnswer(t *testing.T) {
	src := fakeSource{
		services: []*corev1.Service{
			svc("web", "10.96.0.20"),
			svc("db", corev1.ClusterIPNone),
			svc("late", corev1.ClusterIPNone, func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			svc("ext", "", func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName, s.Spec.Ports = corev1.ServiceTypeExternalName, "example.com", nil
			}),
		},
		slices: []*discoveryv1.EndpointSlice{
			endpointSlice("db", ep("10.88.0.5", "db-0", true), ep("10.88.0.6", "db-1", true), ep("10.88.0.7", "db-2", false)),
			endpointSlice("late", ep("10.88.0.9", "", false)),
			endpointSlice("web", ep("10.88.0.4", "", true)),
		},
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  string // rcode, then the answer records
	}{
		{"web.default.svc.cluster.local.", mdns.TypeA, "NOERROR A 10.96.0.20"},
		{"WEB.Default.svc.cluster.local.", mdns.TypeA, "NOERROR A 10.96.0.20"},
		{"web.default.svc.cluster.local.", mdns.TypeAAAA, "NOERROR (soa)"},
		{"db.default.svc.cluster.local.", mdns.TypeA, "NOERROR A 10.88.0.5 A 10.88.0.6"},
		{"db-1.db.default.svc.cluster.local.", mdns.TypeA, "NOERROR A 10.88.0.6"},
		{"db-2.db.default.svc.cluster.local.", mdns.TypeA, "NXDOMAIN (soa)"},
		{"late.default.svc.cluster.local.", mdns.TypeA, "NOERROR A 10.88.0.9"},
		{"10-88-0-9.late.default.svc.cluster.local.", mdns.TypeA, "NOERROR A 10.88.0.9"},
		{"ext.default.svc.cluster.local.", mdns.TypeA, "NOERROR CNAME example.com."},
		{"_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, "NOERROR SRV 80 web.default.svc.cluster.local."},
		{"_http._tcp.db.default.svc.cluster.local.", mdns.TypeSRV,
			"NOERROR SRV 8080 db-0.db.default.svc.cluster.local. SRV 8080 db-1.db.default.svc.cluster.local."},
		{"_http._udp.web.default.svc.cluster.local.", mdns.TypeSRV, "NXDOMAIN (soa)"},
		{"10-88-0-5.default.pod.cluster.local.", mdns.TypeA, "NOERROR A 10.88.0.5"},
		{"nope.default.pod.cluster.local.", mdns.TypeA, "NXDOMAIN (soa)"},
		{"missing.default.svc.cluster.local.", mdns.TypeA, "NXDOMAIN (soa)"},
		{"default.svc.cluster.local.", mdns.TypeA, "NOERROR (soa)"},
		{"cluster.local.", mdns.TypeA, "NOERROR (soa)"},
		{"web.default.cluster.local.", mdns.TypeA, "NXDOMAIN (soa)"},
		{"example.com.", mdns.TypeA, "REFUSED"},
		{"20.0.96.10.in-addr.arpa.", mdns.TypePTR, "NOERROR PTR web.default.svc.cluster.local."},
		{"20.0.96.10.IN-ADDR.ARPA.", mdns.TypePTR, "NOERROR PTR web.default.svc.cluster.local."},
		{"20.0.96.10.in-addr.arpa.", mdns.TypeA, "NOERROR (soa)"},
		{"4.0.88.10.in-addr.arpa.", mdns.TypePTR, "REFUSED"}, // an endpoint of web, not headless
		{"6.0.88.10.in-addr.arpa.", mdns.TypePTR, "NOERROR PTR db-1.db.default.svc.cluster.local."},
		{"9.0.88.10.in-addr.arpa.", mdns.TypePTR, "NOERROR PTR 10-88-0-9.late.default.svc.cluster.local."},
		{"7.0.88.10.in-addr.arpa.", mdns.TypePTR, "REFUSED"}, // not ready
		{"1.1.168.192.in-addr.arpa.", mdns.TypePTR, "REFUSED"},
		{"0.88.10.in-addr.arpa.", mdns.TypePTR, "REFUSED"},
		{"x.0.88.10.in-addr.arpa.", mdns.TypePTR, "REFUSED"},
	} {
		r := Answer(src, "cluster.local", mdns.Question{Name: tc.name, Qtype: tc.qtype, Qclass: mdns.ClassINET}, 5)
		got := []string{mdns.RcodeToString[r.Rcode]}
		for _, rr := range r.Answer {
			switch rr := rr.(type) {
			case *mdns.A:
				got = append(got, "A "+rr.A.String())
			case *mdns.CNAME:
				got = append(got, "CNAME "+rr.Target)
			case *mdns.PTR:
				got = append(got, "PTR "+rr.Ptr)
			case *mdns.SRV:
				got = append(got, "SRV "+strconv.Itoa(int(rr.Port))+" "+rr.Target)
			}
			if rr.Header().Name != mdns.CanonicalName(tc.name) || rr.Header().Ttl != 5 {
				t.Errorf("%s: record header %+v", tc.name, rr.Header())
			}
		}
		if len(r.Authority) == 1 {
			got = append(got, "(soa)")
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s %s = %q, want %q", tc.name, mdns.TypeToString[tc.qtype], g, tc.want)
		}
	}
}
