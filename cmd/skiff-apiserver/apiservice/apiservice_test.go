package apiservice

import (
	"net"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/selfservice"
)

func TestServiceIP(t *testing.T) {
	for cidr, want := range map[string]string{"10.96.0.0/12": "10.96.0.1", "10.100.7.0/16": "10.100.0.1", "192.168.5.0/24": "192.168.5.1"} {
		if got := ServiceIP(netip.MustParsePrefix(cidr)).String(); got != want {
			t.Errorf("ServiceIP(%s) = %s, want %s", cidr, got, want)
		}
	}
}

// TestObjects: kube-apiserver's Service (443 "https" to the API's port,
// its labels, no selector), a slice of the node's address that names it
// and the Endpoints beside it; all kept as they are once published.
func TestObjects(t *testing.T) {
	svc := service(netip.MustParseAddr("10.96.0.1"), 6443)
	p := svc.Spec.Ports[0]
	if svc.Namespace != "default" || svc.Name != "kubernetes" || svc.Spec.ClusterIP != "10.96.0.1" || p.Port != 443 || p.Name != "https" ||
		p.TargetPort.IntValue() != 6443 || p.Protocol != corev1.ProtocolTCP || svc.Spec.Selector != nil || svc.Labels["component"] != "apiserver" {
		t.Errorf("Service %+v", svc)
	}
	s := slice("n1", netip.MustParseAddr("192.0.2.7"), 6443)
	if s.Endpoints[0].Addresses[0] != "192.0.2.7" || *s.Ports[0].Port != 6443 || *s.Ports[0].Name != "https" {
		t.Errorf("slice %+v", s)
	}
	e := endpoints(netip.MustParseAddr("192.0.2.7"), 6443)
	if e.Subsets[0].Addresses[0].IP != "192.0.2.7" || e.Subsets[0].Ports[0].Port != 6443 || e.Labels["endpointslice.kubernetes.io/skip-mirror"] != "true" {
		t.Errorf("Endpoints %+v, want the node's address and the mirroring controller told to skip them", e)
	}
	if selfservice.PlanService(svc, svc) != selfservice.Keep || selfservice.PlanSlice(s, s) != selfservice.Keep ||
		selfservice.PlanEndpoints(e, e) != selfservice.Keep {
		t.Error("published objects would be written again")
	}
	moved := endpoints(netip.MustParseAddr("192.0.2.8"), 6443)
	if selfservice.PlanEndpoints(e, moved) != selfservice.Update {
		t.Error("Endpoints of an old node address would be kept")
	}
}

// TestListen: on the node's address the API answers only the allowed
// networks (here loopback stands for a pod network); with an unspecified
// bind address it listens there already, and no second listener is made.
func TestListen(t *testing.T) {
	var got []net.Listener
	serve := func(ln net.Listener) { got = append(got, ln) }
	lo := netip.MustParseAddr("127.0.0.1")
	if err := listen(Config{BindAddress: "0.0.0.0", Port: 1}, lo, serve); err != nil || len(got) != 0 {
		t.Fatalf("unspecified bind address: %v, %d listeners", err, len(got))
	}
	for _, tc := range []struct {
		name    string
		allowed []netip.Prefix
		want    bool
	}{
		{"allowed", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, true},
		{"refused", []netip.Prefix{netip.MustParsePrefix("10.88.0.0/16")}, false},
	} {
		base, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f := &filtered{Listener: base, allowed: tc.allowed}
		accepted := make(chan bool, 1)
		go func() {
			c, err := f.Accept()
			if err == nil {
				c.Close()
			}
			accepted <- err == nil
		}()
		c, err := net.Dial("tcp", base.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if !tc.want {
			// Refused: closed by the listener, which then waits for more.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("%s: the connection stayed open", tc.name)
			}
			base.Close()
		}
		if ok := <-accepted; ok != tc.want {
			t.Errorf("%s: accepted %v, want %v", tc.name, ok, tc.want)
		}
		c.Close()
		base.Close()
	}
}
