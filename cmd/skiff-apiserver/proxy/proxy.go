// Package proxy runs upstream's service proxy, kube-proxy's nftables
// proxier (k8s.io/kubernetes/pkg/proxy/nftables), inside skiff-apiserver
// on the shim's shared informers, for the one node the control plane
// serves (decision 112): cluster IPs and node ports of the Services reach
// their ready endpoints as on a kube-proxy node.
package proxy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"k8s.io/kubernetes/pkg/proxy/apis"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	kubeproxyscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/config"
	proxymetrics "k8s.io/kubernetes/pkg/proxy/metrics"
	"k8s.io/kubernetes/pkg/proxy/nftables"
	proxyutil "k8s.io/kubernetes/pkg/proxy/util"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/nodeip"
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

// Runs returns the proxy's run functions for server.Options.Controllers,
// started once the server serves. The proxier watches Services and
// EndpointSlices through informers of its own, as kube-proxy does (with
// its label selectors), whose handlers are registered before they start:
// on the shim's running shared informers, upstream's configs delivered the
// existing objects before the proxier was registered with them, and lost
// them (decision 113); the Node's topology labels likewise come from an
// informer of its own (kube-proxy's, of that Node alone), its address from
// cc's. The proxier's own sync loop, upstream's SyncLoop, never returns:
// it ends with the process, which is why only skiff-apiserver's main may
// run the proxy.
func Runs(cc server.ControllerContext, cfg Config) []func(context.Context) {
	nodes := cc.Informers.Core().V1().Nodes()
	nodes.Informer() // registered with the factory before it starts
	return []func(context.Context){func(ctx context.Context) {
		logger := klog.FromContext(ctx).WithName("proxy")
		ctx = klog.NewContext(ctx, logger)
		nodeIP, err := nodeip.Wait(ctx, cfg.NodeName, func(name string) (*corev1.Node, error) { return nodes.Lister().Get(name) })
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
		// kube-proxy's metrics (sync times, pending changes, failures),
		// served on the API server's /metrics.
		proxymetrics.RegisterMetrics(kubeproxyconfig.ProxyModeNFTables)
		proxier, err := nftables.NewProxier(ctx, kpc, corev1.IPv4Protocol, proxyutil.NewNoOpLocalDetector(),
			cfg.NodeName, nodeIP, recorder, nil, false)
		if err != nil {
			logger.Error(err, "Service proxy not started (nftables)")
			return
		}
		proxier.OnServiceCIDRsChanged([]string{cfg.ServiceCIDR})
		services, slices, node := proxyInformers(cc.Client, cfg.NodeName, kpc.ConfigSyncPeriod.Duration)
		sc := proxyconfig.NewServiceConfig(ctx, services.Core().V1().Services(), kpc.ConfigSyncPeriod.Duration)
		sc.RegisterEventHandler(proxier)
		esc := proxyconfig.NewEndpointSliceConfig(ctx, slices.Discovery().V1().EndpointSlices(), kpc.ConfigSyncPeriod.Duration)
		esc.RegisterEventHandler(proxier)
		ntc := proxyconfig.NewNodeTopologyConfig(ctx, node.Core().V1().Nodes(), kpc.ConfigSyncPeriod.Duration)
		ntc.RegisterEventHandler(proxier)
		// As kube-proxy: the handlers are registered, then the informers
		// start (they stop with ctx; the factories' goroutines with them).
		for _, f := range []informers.SharedInformerFactory{services, slices, node} {
			f.Start(ctx.Done())
			defer f.Shutdown()
		}
		// Each returns once its informer synced and the handlers were told.
		sc.Run(ctx.Done())
		esc.Run(ctx.Done())
		if ctx.Err() != nil {
			return // stopped before the informers synced
		}
		logger.Info("Service proxy started", "mode", "nftables", "nodeIP", nodeIP)
		go proxier.SyncLoop() // never returns; see Runs
		<-ctx.Done()
	}}
}

// proxyInformers are kube-proxy's informer factories: Services without a
// service.kubernetes.io/service-proxy-name label (those belong to another
// proxy), EndpointSlices without service.kubernetes.io/headless (DNS
// serves those), and the Node nodeName alone (its topology labels), each
// with managed fields dropped.
func proxyInformers(client kubernetes.Interface, nodeName string, resync time.Duration) (services, slices, node informers.SharedInformerFactory) {
	noProxyName, _ := labels.NewRequirement(apis.LabelServiceProxyName, selection.DoesNotExist, nil)
	noHeadless, _ := labels.NewRequirement(corev1.IsHeadlessService, selection.DoesNotExist, nil)
	factory := func(tweak func(*metav1.ListOptions)) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(client, resync,
			informers.WithTransform(trimManagedFields), informers.WithTweakListOptions(tweak))
	}
	byLabel := func(r *labels.Requirement) informers.SharedInformerFactory {
		selector := labels.NewSelector().Add(*r).String()
		return factory(func(o *metav1.ListOptions) { o.LabelSelector = selector })
	}
	named := fields.OneTermEqualSelector("metadata.name", nodeName).String()
	return byLabel(noProxyName), byLabel(noHeadless), factory(func(o *metav1.ListOptions) { o.FieldSelector = named })
}

// trimManagedFields drops an object's managed fields, as kube-proxy's
// informers do.
func trimManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
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
