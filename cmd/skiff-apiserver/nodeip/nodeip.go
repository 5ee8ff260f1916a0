// Package nodeip finds the IPv4 address of the node skiff-apiserver
// serves, as kube-proxy does: the service proxy and the cluster DNS both
// work on it.
package nodeip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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
