package network

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// NodeIPs returns the node's IPs for status.hostIP: the global unicast
// addresses of the interface that holds the IPv4 default route (else the
// IPv6 one), IPv4 first; failing that, the first non-loopback global unicast
// address of any interface; failing that, 127.0.0.1. Reads netlink only;
// safe for concurrent use.
func NodeIPs() ([]net.IP, error) {
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		link, err := defaultRouteLink(family)
		if err != nil {
			return nil, err
		}
		if link == nil {
			continue
		}
		ips, err := globalUnicast(link)
		if err != nil {
			return nil, err
		}
		if len(ips) > 0 {
			return ips, nil
		}
	}
	ips, err := globalUnicast(nil)
	if err != nil {
		return nil, err
	}
	if len(ips) > 0 {
		return ips[:1], nil
	}
	return []net.IP{net.IPv4(127, 0, 0, 1)}, nil
}

// defaultRouteLink returns the link of the first default route of family
// in the main table, or nil if there is none.
func defaultRouteLink(family int) (netlink.Link, error) {
	routes, err := netlink.RouteList(nil, family)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if r.LinkIndex <= 0 {
			continue
		}
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		link, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			return nil, fmt.Errorf("default route link %d: %w", r.LinkIndex, err)
		}
		return link, nil
	}
	return nil, nil
}

// globalUnicast lists the global unicast addresses of link (nil: all
// links), IPv4 before IPv6.
func globalUnicast(link netlink.Link) ([]net.IP, error) {
	addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	var v4, v6 []net.IP
	for _, a := range addrs {
		ip := a.IP
		if ip == nil || !ip.IsGlobalUnicast() {
			continue
		}
		if ip4 := ip.To4(); ip4 != nil {
			v4 = append(v4, ip4)
		} else {
			v6 = append(v6, ip)
		}
	}
	return append(v4, v6...), nil
}
