package upstream

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/dns"
	"github.com/skiffnode/skiff/shim/server"
)

// TestClusterDNS: with the cluster DNS among the controllers, the
// kube-dns Service gets its cluster IP and an EndpointSlice at the node's
// address, the server there answers a Service's name with its cluster IP,
// and the Service is put back after a delete.
func TestClusterDNS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	host := hostIPv4(t) // an EndpointSlice may not hold a loopback address
	port := freeUDPPort(t, host)
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := dns.Config{NodeName: "n1", ServiceIP: netip.MustParseAddr("10.96.0.10"), Zone: "cluster.local", Port: port, ResolvConf: resolv}
	client, _ := startServerWith(ctx, t, t.TempDir(), testConfig, func(o *server.Options) {
		build := o.Controllers
		o.Controllers = func(cc server.ControllerContext) ([]func(context.Context), error) {
			runs, err := build(cc)
			return append(runs, dns.Runs(cc, cfg)...), err
		}
	})
	createNode(ctx, t, client, "n1", host)
	web, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeDNS := func() *corev1.Service {
		svc, err := client.CoreV1().Services(dns.ServiceNamespace).Get(ctx, dns.ServiceName, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return svc
	}
	waitFor(ctx, t, "the kube-dns Service at 10.96.0.10", func() bool { s := kubeDNS(); return s != nil && s.Spec.ClusterIP == "10.96.0.10" })
	waitFor(ctx, t, "the kube-dns EndpointSlice at "+host, func() bool {
		l, err := client.DiscoveryV1().EndpointSlices(dns.ServiceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"})
		return err == nil && len(l.Items) == 1 && len(l.Items[0].Endpoints) == 1 && l.Items[0].Endpoints[0].Addresses[0] == host &&
			*l.Items[0].Ports[0].Port == int32(port)
	})
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	waitFor(ctx, t, "web.default.svc.cluster.local answered with "+web.Spec.ClusterIP, func() bool {
		m := new(mdns.Msg)
		m.SetQuestion("web.default.svc.cluster.local.", mdns.TypeA)
		r, err := mdns.Exchange(m, addr)
		return err == nil && len(r.Answer) == 1 && r.Answer[0].(*mdns.A).A.String() == web.Spec.ClusterIP
	})
	old := kubeDNS()
	if err := client.CoreV1().Services(dns.ServiceNamespace).Delete(ctx, dns.ServiceName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the kube-dns Service put back", func() bool { s := kubeDNS(); return s != nil && s.UID != old.UID })
}

// createNode creates Node name with the InternalIP address.
func createNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name, address string) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: address}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hostIPv4 is an IPv4 address of this machine outside loopback; the test
// is skipped on a machine without one.
func hostIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr().String()
		}
	}
	t.Skip("no IPv4 address outside loopback")
	return ""
}

// freeUDPPort is a port of host free for TCP and UDP when asked.
func freeUDPPort(t *testing.T, host string) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if u, err := net.ListenPacket("udp", l.Addr().String()); err == nil {
			_ = u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}
