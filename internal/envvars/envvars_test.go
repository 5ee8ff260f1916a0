package envvars

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

// TestFromServices_G4: the kubelet's variables for a service with a named
// UDP port and a second port, in its order.
func TestFromServices_G4(t *testing.T) {
	s := svc("ns", "my-svc", "10.96.0.10",
		v1.ServicePort{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP},
		v1.ServicePort{Name: "metrics", Port: 9153})
	want := []v1.EnvVar{
		{Name: "MY_SVC_SERVICE_HOST", Value: "10.96.0.10"},
		{Name: "MY_SVC_SERVICE_PORT", Value: "53"},
		{Name: "MY_SVC_SERVICE_PORT_DNS", Value: "53"},
		{Name: "MY_SVC_SERVICE_PORT_METRICS", Value: "9153"},
		{Name: "MY_SVC_PORT", Value: "udp://10.96.0.10:53"},
		{Name: "MY_SVC_PORT_53_UDP", Value: "udp://10.96.0.10:53"},
		{Name: "MY_SVC_PORT_53_UDP_PROTO", Value: "udp"},
		{Name: "MY_SVC_PORT_53_UDP_PORT", Value: "53"},
		{Name: "MY_SVC_PORT_53_UDP_ADDR", Value: "10.96.0.10"},
		{Name: "MY_SVC_PORT_9153_TCP", Value: "tcp://10.96.0.10:9153"},
		{Name: "MY_SVC_PORT_9153_TCP_PROTO", Value: "tcp"},
		{Name: "MY_SVC_PORT_9153_TCP_PORT", Value: "9153"},
		{Name: "MY_SVC_PORT_9153_TCP_ADDR", Value: "10.96.0.10"},
	}
	if got := FromServices([]*v1.Service{s}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := FromServices([]*v1.Service{svc("ns", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80})}); len(got) != 0 {
		t.Errorf("headless service: %v", got)
	}
}

// TestSelect_G4: the default namespace's kubernetes service always, the
// pod namespace's services only with links, a namespace's own
// "kubernetes" first, headless ones never.
func TestSelect_G4(t *testing.T) {
	master := svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443})
	other := svc("default", "web", "10.96.0.2", v1.ServicePort{Port: 80})
	mine := svc("app", "db", "10.96.0.3", v1.ServicePort{Port: 5432})
	own := svc("app", "kubernetes", "10.96.0.4", v1.ServicePort{Port: 1})
	headless := svc("app", "h", v1.ClusterIPNone, v1.ServicePort{Port: 1})
	all := []*v1.Service{master, other, mine, headless}
	names := func(ss []*v1.Service) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		all   []*v1.Service
		ns    string
		links bool
		want  []string
	}{
		{"links", all, "app", true, []string{"app/db", "default/kubernetes"}},
		{"no links", all, "app", false, []string{"default/kubernetes"}},
		{"default namespace", all, "default", true, []string{"default/kubernetes", "default/web"}},
		{"own kubernetes", append(all, own), "app", true, []string{"app/db", "app/kubernetes"}},
	} {
		if got := names(Select(tt.all, tt.ns, tt.links)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
