// Package nodeip finds the IPv4 address of the node skiff-apiserver
// serves, as kube-proxy does: the service proxy and the cluster DNS both
// work on it.
package nodeip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	netutils "k8s.io/utils/net"
)

// waitFor bounds how long Wait waits for the Node's address (the agent
// registers it within seconds of the API server's start).
const waitFor = 5 * time.Minute

// Wait polls get for node name until it has an IPv4 address (IPv4), for
// at most five minutes or until ctx ends.
func Wait(ctx context.Context, name string, get func(string) (*corev1.Node, error)) (net.IP, error) {
	if name == "" {
		return nil, errors.New("no node name")
	}
	var ip net.IP
	err := wait.PollUntilContextTimeout(ctx, time.Second, waitFor, true, func(context.Context) (bool, error) {
		node, err := get(name)
		if err != nil {
			return false, nil
		}
		ip = IPv4(node)
		return ip != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("node %s has no IPv4 address: %w", name, err)
	}
	return ip, nil
}

// WaitSynced waits until every cache of synced has synced, then for node
// name's IPv4 address (Wait). An error: ctx ended first, or Wait's.
func WaitSynced(ctx context.Context, synced []cache.InformerSynced, name string, get func(string) (*corev1.Node, error)) (netip.Addr, error) {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return netip.Addr{}, fmt.Errorf("caches not synced: %w", context.Cause(ctx))
	}
	ip, err := Wait(ctx, name, get)
	if err != nil {
		return netip.Addr{}, err
	}
	addr, _ := netip.AddrFromSlice(ip.To4())
	return addr, nil
}

// Clients is what a server on node's address answers: the prefixes of
// extra (the pod network), the node itself and loopback.
func Clients(extra []netip.Prefix, node netip.Addr) []netip.Prefix {
	return append(slices.Clone(extra), netip.PrefixFrom(node, node.BitLen()), netip.MustParsePrefix("127.0.0.0/8"))
}

// IPv4 is node's first IPv4 InternalIP, else its first IPv4 ExternalIP,
// else nil.
func IPv4(node *corev1.Node) net.IP {
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type != typ {
				continue
			}
			if ip := netutils.ParseIPSloppy(a.Address); ip != nil && ip.To4() != nil {
				return ip
			}
		}
	}
	return nil
}
