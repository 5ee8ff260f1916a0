package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	mdns "github.com/miekg/dns"
)

// forwardTimeout bounds one exchange with an upstream resolver.
const forwardTimeout = 2 * time.Second

// Handler answers DNS requests: the cluster zone from Source (Answer),
// other names by forwarding to Upstreams, and only to clients in Clients:
// anyone else gets REFUSED, so that the server is no open resolver.
type Handler struct {
	Source Source
	// Zone is the cluster domain, e.g. "cluster.local".
	Zone string
	// TTL of the zone's records and of its negative answers.
	TTL uint32
	// Upstreams are "host:port" resolvers for names outside Zone, tried
	// in order; none: SERVFAIL.
	Upstreams []string
	// Clients are the prefixes allowed to ask (the pod network, the
	// node's own addresses).
	Clients []netip.Prefix
}

// ServeDNS implements mdns.Handler.
func (h *Handler) ServeDNS(w mdns.ResponseWriter, req *mdns.Msg) {
	reply := h.reply(w.RemoteAddr(), w.LocalAddr().Network(), req)
	_ = w.WriteMsg(reply) // the client has gone: nothing to do
}

// reply is the response to req from remote over network ("udp", "tcp").
func (h *Handler) reply(remote net.Addr, network string, req *mdns.Msg) *mdns.Msg {
	m := new(mdns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	switch {
	case !h.allowed(remote):
		m.Rcode = mdns.RcodeRefused
		return m
	case req.Opcode != mdns.OpcodeQuery || len(req.Question) != 1:
		m.Rcode = mdns.RcodeNotImplemented
		return m
	}
	r := Answer(h.Source, h.Zone, req.Question[0], h.TTL)
	if r.Rcode != mdns.RcodeRefused {
		m.Authoritative = true
		m.Rcode, m.Answer, m.Ns = r.Rcode, r.Answer, r.Authority
		return m
	}
	fwd, err := h.forward(network, req)
	if err != nil {
		m.Rcode = mdns.RcodeServerFailure
		return m
	}
	fwd.Id = req.Id
	return fwd
}

// allowed reports whether remote is in h.Clients.
func (h *Handler) allowed(remote net.Addr) bool {
	ap, err := netip.ParseAddrPort(remote.String())
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range h.Clients {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// forward asks req of the upstreams in turn, over network.
func (h *Handler) forward(network string, req *mdns.Msg) (*mdns.Msg, error) {
	c := &mdns.Client{Net: network, Timeout: forwardTimeout}
	errs := []error{errors.New("no upstream resolvers")}
	for _, u := range h.Upstreams {
		resp, _, err := c.Exchange(req, u)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u, err))
	}
	return nil, errors.Join(errs...)
}

// Serve answers with h on UDP and TCP at addr until ctx ends; it returns
// the first error of either listener (nil once ctx ended), after both
// have stopped.
func Serve(ctx context.Context, addr string, h mdns.Handler) error {
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		_ = udp.Close()
		return fmt.Errorf("dns: %w", err)
	}
	servers := []*mdns.Server{{PacketConn: udp, Handler: h}, {Listener: tcp, Handler: h}}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		go func() { errc <- s.ActivateAndServe() }()
		select { // a Shutdown before the start would not stop it
		case <-started:
		case err := <-errc:
			errc <- err
		}
	}
	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
	}
	for _, s := range servers {
		_ = s.Shutdown() // one that failed says so; nothing to undo
	}
	for i := boolToInt(first != nil); i < len(servers); i++ {
		if err := <-errc; first == nil && ctx.Err() == nil {
			first = err
		}
	}
	return first
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
