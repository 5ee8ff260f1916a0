// Package proxy runs upstream's service proxy, kube-proxy's nftables
// proxier (k8s.io/kubernetes/pkg/proxy/nftables), inside skiff-apiserver
// on the shim's shared informers, for the one node the control plane
// serves (decision 112): cluster IPs and node ports of the Services reach
// their ready endpoints as on a kube-proxy node.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	kubeproxyscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/config"
	"k8s.io/kubernetes/pkg/proxy/nftables"
	proxyutil "k8s.io/kubernetes/pkg/proxy/util"
	netutils "k8s.io/utils/net"

	"github.com/skiffnode/skiff/shim/server"
)

// Config is what the proxy needs beyond the shim's informers.
type Config struct {
	// NodeName is the node whose endpoints are local and whose IPv4
	// InternalIP (else ExternalIP) is the proxier's node IP.
	NodeName string
	// ServiceCIDR is the Services' cluster IP range: traffic to an
	// unallocated address of it is rejected.
	ServiceCIDR string
}

// nodeIPWait bounds how long the proxy waits for its Node's address
// (the agent registers it within seconds of the API server's start).
const nodeIPWait = 5 * time.Minute

// Runs returns the proxy's run functions for server.Options.Controllers:
// built on cc's informers now (before the factory starts), started once
// the server serves. The proxier's own sync loop, upstream's SyncLoop,
// never returns: it ends with the process, which is why only
// skiff-apiserver's main may run the proxy.
func Runs(cc server.ControllerContext, cfg Config) []func(context.Context) {
	core := cc.Informers.Core().V1()
	services, slices, nodes := core.Services(), cc.Informers.Discovery().V1().EndpointSlices(), core.Nodes()
	// Registered with the factory before it starts.
	services.Informer()
	slices.Informer()
	nodes.Informer()
	return []func(context.Context){func(ctx context.Context) {
		logger := klog.FromContext(ctx).WithName("proxy")
		ctx = klog.NewContext(ctx, logger)
		nodeIP, err := waitNodeIP(ctx, cfg.NodeName, func(name string) (*corev1.Node, error) { return nodes.Lister().Get(name) })
		if err != nil {
			logger.Error(err, "Service proxy not started")
			return
		}
		broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cc.Client.EventsV1()})
		if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			logger.Error(err, "Service proxy not started: events")
			return
		}
		defer broadcaster.Shutdown()
		recorder := broadcaster.NewRecorder(kubeproxyscheme.Scheme, "kube-proxy")
		kpc, err := defaults()
		if err != nil {
			logger.Error(err, "Service proxy not started")
			return
		}
		proxier, err := nftables.NewProxier(ctx, kpc, corev1.IPv4Protocol, proxyutil.NewNoOpLocalDetector(),
			cfg.NodeName, nodeIP, recorder, nil, false)
		if err != nil {
			logger.Error(err, "Service proxy not started (nftables)")
			return
		}
		proxier.OnServiceCIDRsChanged([]string{cfg.ServiceCIDR})
		sc := proxyconfig.NewServiceConfig(ctx, services, kpc.ConfigSyncPeriod.Duration)
		sc.RegisterEventHandler(proxier)
		esc := proxyconfig.NewEndpointSliceConfig(ctx, slices, kpc.ConfigSyncPeriod.Duration)
		esc.RegisterEventHandler(proxier)
		ntc := proxyconfig.NewNodeTopologyConfig(ctx, nodes, kpc.ConfigSyncPeriod.Duration)
		ntc.RegisterEventHandler(proxier)
		// Each returns once its informer synced and the handlers were told.
		sc.Run(ctx.Done())
		esc.Run(ctx.Done())
		logger.Info("Service proxy started", "mode", "nftables", "nodeIP", nodeIP)
		go proxier.SyncLoop() // never returns; see Runs
		<-ctx.Done()
	}}
}

// defaults returns kube-proxy's default configuration (v1alpha1's
// defaults, converted) in nftables mode.
func defaults() (*kubeproxyconfig.KubeProxyConfiguration, error) {
	ext := &kubeproxyconfigv1alpha1.KubeProxyConfiguration{}
	kubeproxyscheme.Scheme.Default(ext)
	kpc := &kubeproxyconfig.KubeProxyConfiguration{}
	if err := kubeproxyscheme.Scheme.Convert(ext, kpc, nil); err != nil {
		return nil, fmt.Errorf("kube-proxy defaults: %w", err)
	}
	kpc.Mode = kubeproxyconfig.ProxyModeNFTables
	return kpc, nil
}

// waitNodeIP polls get for node name until it has an IPv4 address
// (InternalIP first, as kube-proxy), for at most nodeIPWait.
func waitNodeIP(ctx context.Context, name string, get func(string) (*corev1.Node, error)) (net.IP, error) {
	if name == "" {
		return nil, errors.New("no node name")
	}
	var ip net.IP
	err := wait.PollUntilContextTimeout(ctx, time.Second, nodeIPWait, true, func(context.Context) (bool, error) {
		node, err := get(name)
		if err != nil {
			return false, nil
		}
		ip = nodeIPv4(node)
		return ip != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("node %s has no IPv4 address: %w", name, err)
	}
	return ip, nil
}

// nodeIPv4 is node's first IPv4 InternalIP, else its first IPv4
// ExternalIP, else nil.
func nodeIPv4(node *corev1.Node) net.IP {
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
