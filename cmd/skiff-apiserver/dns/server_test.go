package dns

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// freeAddr returns a loopback address with a port free for UDP and TCP.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve runs h at a free loopback address until the test ends.
func serve(t *testing.T, h mdns.Handler) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, addr, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return addr
}

// exchange asks name's A records of addr over network until it answers.
func exchange(t *testing.T, network, addr, name string) *mdns.Msg {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(name, mdns.TypeA)
	c := &mdns.Client{Net: network, Timeout: time.Second}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, _, err := c.Exchange(m, addr)
		if err == nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: %v", network, name, err)
		}
	}
}

// TestServe: the cluster zone is answered over UDP and TCP,
// authoritatively; other names are forwarded to the upstream; a client
// outside Clients is refused.
func TestServe(t *testing.T) {
	upstream := serve(t, mdns.HandlerFunc(func(w mdns.ResponseWriter, req *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(req)
		m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: req.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60},
			A: net.IPv4(192, 0, 2, 80)}}
		_ = w.WriteMsg(m)
	}))
	h := &Handler{
		Source: fakeSource{services: []*corev1.Service{svc("web", "10.96.0.20")}},
		Zone:   "cluster.local", TTL: 5, Upstreams: []string{upstream},
		Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}
	addr := serve(t, h)
	for _, network := range []string{"udp", "tcp"} {
		r := exchange(t, network, addr, "web.default.svc.cluster.local.")
		if !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*mdns.A).A.String() != "10.96.0.20" {
			t.Errorf("%s: cluster name: %v", network, r)
		}
		r = exchange(t, network, addr, "example.com.")
		if r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*mdns.A).A.String() != "192.0.2.80" {
			t.Errorf("%s: forwarded name: %v", network, r)
		}
	}
	others := *h
	others.Clients = []netip.Prefix{netip.MustParsePrefix("10.88.0.0/16")}
	if r := exchange(t, "udp", serve(t, &others), "web.default.svc.cluster.local."); r.Rcode != mdns.RcodeRefused || len(r.Answer) != 0 {
		t.Errorf("a client outside the allowed prefixes: %v, want REFUSED", r)
	}
	none := *h
	none.Upstreams = nil
	if r := exchange(t, "udp", serve(t, &none), "example.com."); r.Rcode != mdns.RcodeServerFailure {
		t.Errorf("no upstreams: %v, want SERVFAIL", r)
	}
}

// TestServeFails: an address in use is an error, and nothing is left
// listening.
func TestServeFails(t *testing.T) {
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := Serve(context.Background(), l.LocalAddr().String(), &Handler{}); err == nil {
		t.Fatal("Serve on a UDP port in use: no error")
	}
}
