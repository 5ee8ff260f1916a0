// Package dns answers the cluster's names as the Kubernetes DNS
// specification (schema 1.1.0) defines them, from the Services and
// EndpointSlices the control plane serves: a pure function of the
// question and a Source (decision 112, "Not decided yet": this is the
// resolution half of the candidate server on the shared informers; it
// serves nothing yet).
package dns

import (
	"net/netip"
	"slices"
	"strings"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Source is what answers are computed from.
type Source interface {
	// Service returns the Service namespace/name, or nil.
	Service(namespace, name string) *corev1.Service
	// EndpointSlices returns the EndpointSlices of the Service
	// namespace/name.
	EndpointSlices(namespace, service string) []*discoveryv1.EndpointSlice
	// Services returns every Service (reverse lookups).
	Services() []*corev1.Service
}

// Reply is an answer to one question: its response code and the records
// of its answer and authority sections.
type Reply struct {
	Rcode     int
	Answer    []mdns.RR
	Authority []mdns.RR
}

// reverseZone holds the IPv4 reverse names (PTR records).
const reverseZone = "in-addr.arpa."

// Answer answers q for zone (a fully qualified name such as
// "cluster.local.") from src, with records of ttl seconds, and the
// reverse names of the addresses the cluster names (answerReverse).
// Other names are not its to answer: Rcode is RcodeRefused.
func Answer(src Source, zone string, q mdns.Question, ttl uint32) Reply {
	name := mdns.CanonicalName(q.Name)
	zone = mdns.CanonicalName(zone)
	if mdns.IsSubDomain(reverseZone, name) {
		return answerReverse(src, zone, q, name, ttl)
	}
	if !mdns.IsSubDomain(zone, name) {
		return Reply{Rcode: mdns.RcodeRefused}
	}
	labels := mdns.SplitDomainName(strings.TrimSuffix(name, zone))
	a := answerer{src: src, zone: zone, q: q, name: name, ttl: ttl}
	var found bool
	switch n := len(labels); {
	case n == 0 || n == 1 && (labels[0] == "svc" || labels[0] == "pod"):
		found = true // the zone and its two subtrees exist, with no records
	case labels[n-1] == "pod" && n == 3:
		found = a.pod(labels[0])
	case labels[n-1] != "svc":
	case n == 2:
		found = true // a namespace
	case n == 3:
		found = a.service(labels[1], labels[0])
	case n == 4:
		found = a.endpoint(labels[2], labels[1], labels[0])
	case n == 5 && strings.HasPrefix(labels[0], "_") && strings.HasPrefix(labels[1], "_"):
		found = a.srv(labels[3], labels[2], labels[0][1:], labels[1][1:])
	}
	if !found {
		return Reply{Rcode: mdns.RcodeNameError, Authority: []mdns.RR{soa(zone, ttl)}}
	}
	if len(a.answer) == 0 {
		return Reply{Rcode: mdns.RcodeSuccess, Authority: []mdns.RR{soa(zone, ttl)}}
	}
	return Reply{Rcode: mdns.RcodeSuccess, Answer: a.answer}
}

// answerer collects the records of one question.
type answerer struct {
	src    Source
	zone   string
	q      mdns.Question
	name   string
	ttl    uint32
	answer []mdns.RR
}

func (a *answerer) header(typ uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: a.name, Rrtype: typ, Class: mdns.ClassINET, Ttl: a.ttl}
}

// address adds an A record of ip if the question asks for one (IPv4
// only: the Services are).
func (a *answerer) address(ip string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !addr.Is4() || (a.q.Qtype != mdns.TypeA && a.q.Qtype != mdns.TypeANY) {
		return
	}
	a.answer = append(a.answer, &mdns.A{Hdr: a.header(mdns.TypeA), A: addr.AsSlice()})
}

// pod answers <a-b-c-d>.<ns>.pod.<zone>: the address the name spells.
func (a *answerer) pod(label string) bool {
	addr, err := netip.ParseAddr(strings.ReplaceAll(label, "-", "."))
	if err != nil || !addr.Is4() {
		return false
	}
	a.address(addr.String())
	return true
}

// service answers <svc>.<ns>.svc.<zone>: its cluster IP, its ready
// endpoints' addresses if headless, a CNAME if ExternalName.
func (a *answerer) service(namespace, name string) bool {
	svc := a.src.Service(namespace, name)
	if svc == nil {
		return false
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		if a.q.Qtype != mdns.TypeAAAA {
			a.answer = append(a.answer, &mdns.CNAME{Hdr: a.header(mdns.TypeCNAME), Target: mdns.Fqdn(svc.Spec.ExternalName)})
		}
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		for _, ep := range a.endpoints(svc) {
			a.address(ep.Addresses[0])
		}
	default:
		a.address(svc.Spec.ClusterIP)
	}
	return true
}

// endpoint answers <hostname>.<svc>.<ns>.svc.<zone> of a headless
// Service: the endpoint of that hostname (or of the dashed address).
func (a *answerer) endpoint(namespace, service, host string) bool {
	svc := a.src.Service(namespace, service)
	if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return false
	}
	found := false
	for _, ep := range a.endpoints(svc) {
		if endpointHost(ep) == host {
			a.address(ep.Addresses[0])
			found = true
		}
	}
	return found
}

// srv answers _<port>._<proto>.<svc>.<ns>.svc.<zone> for a named port:
// the Service's name as the target, or each ready endpoint's if headless.
func (a *answerer) srv(namespace, service, port, proto string) bool {
	svc := a.src.Service(namespace, service)
	if svc == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return false
	}
	base := service + "." + namespace + ".svc." + a.zone
	for _, p := range svc.Spec.Ports {
		if p.Name != port || !strings.EqualFold(string(p.Protocol), proto) {
			continue
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			a.srvRecord(uint16(p.Port), base)
			return true
		}
		for _, ep := range a.endpoints(svc) {
			for _, slicePort := range ep.ports {
				if slicePort.Name != nil && *slicePort.Name == port && slicePort.Port != nil {
					a.srvRecord(uint16(*slicePort.Port), endpointHost(ep)+"."+base)
				}
			}
		}
		return true
	}
	return false
}

func (a *answerer) srvRecord(port uint16, target string) {
	if a.q.Qtype != mdns.TypeSRV && a.q.Qtype != mdns.TypeANY {
		return
	}
	a.answer = append(a.answer, &mdns.SRV{Hdr: a.header(mdns.TypeSRV), Priority: 0, Weight: 100, Port: port, Target: target})
}

// endpoint is one endpoint of a Service with its slice's ports.
type endpoint struct {
	discoveryv1.Endpoint
	ports []discoveryv1.EndpointPort
}

// endpoints are svc's IPv4 endpoints that are ready, or all of them with
// publishNotReadyAddresses.
func (a *answerer) endpoints(svc *corev1.Service) []endpoint {
	var out []endpoint
	for _, s := range a.src.EndpointSlices(svc.Namespace, svc.Name) {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range s.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if len(ep.Addresses) > 0 && (ready || svc.Spec.PublishNotReadyAddresses) {
				out = append(out, endpoint{Endpoint: ep, ports: s.Ports})
			}
		}
	}
	return out
}

// endpointHost is ep's hostname, else its address with dashes.
func endpointHost(ep endpoint) string {
	if ep.Hostname != nil && *ep.Hostname != "" {
		return *ep.Hostname
	}
	return strings.ReplaceAll(ep.Addresses[0], ".", "-")
}

// answerReverse answers <d>.<c>.<b>.<a>.in-addr.arpa. as the DNS
// specification's PTR records: a Service's cluster IP points to
// <svc>.<ns>.svc.<zone>, a headless Service's ready endpoint to
// <hostname>.<svc>.<ns>.svc.<zone> (its dashed address without a
// hostname), the names answer answers forward. Other addresses are not
// the cluster's (RcodeRefused: forwarded, as CoreDNS's fallthrough). Each
// question lists the Services: a node has tens, not thousands.
func answerReverse(src Source, zone string, q mdns.Question, name string, ttl uint32) Reply {
	ip, ok := reverseAddr(name)
	if !ok {
		return Reply{Rcode: mdns.RcodeRefused}
	}
	a := answerer{src: src, zone: zone, q: q, name: name, ttl: ttl}
	var targets []string
	for _, svc := range src.Services() {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		base := svc.Name + "." + svc.Namespace + ".svc." + zone
		if svc.Spec.ClusterIP == ip || slices.Contains(svc.Spec.ClusterIPs, ip) {
			targets = append(targets, base)
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			continue
		}
		for _, ep := range a.endpoints(svc) {
			if ep.Addresses[0] == ip {
				targets = append(targets, endpointHost(ep)+"."+base)
			}
		}
	}
	if len(targets) == 0 {
		return Reply{Rcode: mdns.RcodeRefused}
	}
	if q.Qtype != mdns.TypePTR && q.Qtype != mdns.TypeANY {
		return Reply{Rcode: mdns.RcodeSuccess, Authority: []mdns.RR{soa(reverseZone, ttl)}}
	}
	slices.Sort(targets)
	for _, t := range slices.Compact(targets) {
		a.answer = append(a.answer, &mdns.PTR{Hdr: a.header(mdns.TypePTR), Ptr: t})
	}
	return Reply{Rcode: mdns.RcodeSuccess, Answer: a.answer}
}

// reverseAddr is the IPv4 address that name (canonical, in reverseZone)
// spells backwards, as a string.
func reverseAddr(name string) (string, bool) {
	labels := mdns.SplitDomainName(strings.TrimSuffix(name, reverseZone))
	if len(labels) != 4 {
		return "", false
	}
	slices.Reverse(labels)
	addr, err := netip.ParseAddr(strings.Join(labels, "."))
	if err != nil || !addr.Is4() {
		return "", false
	}
	return addr.String(), true
}

// soa is the zone's SOA record, for negative answers (its minimum is the
// negative-caching TTL).
func soa(zone string, ttl uint32) mdns.RR {
	return &mdns.SOA{
		Hdr: mdns.RR_Header{Name: zone, Rrtype: mdns.TypeSOA, Class: mdns.ClassINET, Ttl: ttl},
		Ns:  "ns.dns." + zone, Mbox: "hostmaster." + zone,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ttl,
	}
}
