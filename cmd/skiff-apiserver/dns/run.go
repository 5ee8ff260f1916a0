package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/klog/v2"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/selfservice"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/nodeip"
	"github.com/skiffnode/skiff/shim/server"
)

// Defaults of the cluster DNS (skiff-apiserver's flags).
const (
	// DefaultPort is where the server listens on the node's address:
	// kube-dns's own port, clear of a resolver the host runs on 53.
	DefaultPort = 10053
	// DefaultZone is the kubelet's --cluster-domain.
	DefaultZone = "cluster.local"
	// TTL of the zone's answers, CoreDNS's kubernetes plugin's default.
	TTL = 5
)

// republishEvery is how often the kube-dns Service and EndpointSlice are
// checked and put back (after a delete or an edit), as an addon manager
// would.
const republishEvery = time.Minute

// Config is the cluster DNS of one node (decision 113).
type Config struct {
	// NodeName is the node whose IPv4 address the server listens on.
	NodeName string
	// ServiceIP is the kube-dns Service's cluster IP: the agent's
	// --cluster-dns.
	ServiceIP netip.Addr
	// Zone is the cluster domain.
	Zone string
	// Port is the server's port on the node's address.
	Port int
	// Clients are the pod networks allowed to ask, besides the node's
	// address and loopback.
	Clients []netip.Prefix
	// ResolvConf names the upstream resolvers for other names.
	ResolvConf string
}

// Runs returns the cluster DNS's run function for
// server.Options.Controllers, built on cc's informers now (before the
// factory starts): once the Node has an address it publishes the kube-dns
// Service and EndpointSlice (again whenever they change, and every
// minute), and serves until ctx ends.
func Runs(cc server.ControllerContext, cfg Config) []func(context.Context) {
	core := cc.Informers.Core().V1()
	services, eps, nodes := core.Services(), cc.Informers.Discovery().V1().EndpointSlices(), core.Nodes()
	changed, synced := selfservice.Notify([]string{ServiceNamespace + "/" + ServiceName, ServiceNamespace + "/" + sliceName},
		services.Informer(), eps.Informer())
	synced = append(synced, nodes.Informer().HasSynced)
	src := &listerSource{services: services.Lister(), slices: eps.Lister()}
	return []func(context.Context){func(ctx context.Context) {
		logger := klog.FromContext(ctx).WithName("dns")
		ctx = klog.NewContext(ctx, logger)
		node, err := nodeip.WaitSynced(ctx, synced, cfg.NodeName, nodes.Lister().Get)
		if err != nil {
			logger.Error(err, "Cluster DNS not started")
			return
		}
		if err := run(ctx, cc.Client, cfg, src, node, changed); err != nil {
			logger.Error(err, "Cluster DNS stopped")
		}
	}}
}

// run serves the cluster DNS on node's address until ctx ends or the
// server fails, and publishes its Service and EndpointSlice meanwhile:
// at once, on each signal of changed and every republishEvery.
func run(ctx context.Context, client kubernetes.Interface, cfg Config, src *listerSource, node netip.Addr, changed <-chan struct{}) error {
	logger := klog.FromContext(ctx)
	addr := net.JoinHostPort(node.String(), strconv.Itoa(cfg.Port))
	upstreams, err := Upstreams(cfg.ResolvConf, []string{net.JoinHostPort(cfg.ServiceIP.String(), "53"), addr})
	if err != nil {
		logger.Error(err, "No upstream resolvers: names outside the cluster domain fail", "resolvConf", cfg.ResolvConf)
	}
	h := &Handler{Source: src, Zone: cfg.Zone, TTL: TTL, Upstreams: upstreams,
		Clients: nodeip.Clients(cfg.Clients, node)}
	p := &selfservice.Publisher{Client: client, What: "cluster DNS",
		Service: func() (*corev1.Service, error) {
			return selfservice.NotFoundNil(src.services.Services(ServiceNamespace).Get(ServiceName))
		},
		Slice: func() (*discoveryv1.EndpointSlice, error) {
			return selfservice.NotFoundNil(src.slices.EndpointSlices(ServiceNamespace).Get(sliceName))
		},
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		p.Loop(pubCtx, selfservice.Want{Service: service(cfg.ServiceIP), Slice: slice(cfg.NodeName, node, cfg.Port)}, changed, republishEvery)
	}()
	defer func() { stopPub(); <-pubDone }()
	logger.Info("Cluster DNS serving", "address", addr, "service", cfg.ServiceIP, "zone", cfg.Zone, "upstreams", upstreams)
	return Serve(ctx, addr, h)
}

// Upstreams are the nameservers of the resolv.conf at path as host:port,
// without those in self (the cluster DNS itself: forwarding to it would
// loop).
func Upstreams(path string, self []string) ([]string, error) {
	cc, err := mdns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("upstream resolvers: %w", err)
	}
	var out []string
	for _, s := range cc.Servers {
		hp := net.JoinHostPort(s, cc.Port)
		if !slices.Contains(self, hp) {
			out = append(out, hp)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("upstream resolvers: " + path + " names none but the cluster DNS")
	}
	return out, nil
}

// listerSource is Source on the shared informers' listers.
type listerSource struct {
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
}

func (s *listerSource) Service(namespace, name string) *corev1.Service {
	svc, err := s.services.Services(namespace).Get(name)
	if err != nil {
		return nil
	}
	return svc
}

func (s *listerSource) EndpointSlices(namespace, service string) []*discoveryv1.EndpointSlice {
	list, err := s.slices.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service}))
	if err != nil {
		return nil
	}
	return list
}

func (s *listerSource) Services() []*corev1.Service {
	list, err := s.services.List(labels.Everything())
	if err != nil {
		return nil
	}
	return list
}

// Validate checks c against the Services' cluster IP range.
func (c Config) Validate(serviceCIDR netip.Prefix) error {
	switch {
	case c.NodeName == "":
		return errors.New("--cluster-dns needs --node-name: the server listens on that node's address")
	case !c.ServiceIP.Is4() || !serviceCIDR.Contains(c.ServiceIP):
		return fmt.Errorf("--cluster-dns %s: want an IPv4 address in --service-cluster-ip-range %s (it is the kube-dns Service's cluster IP)", c.ServiceIP, serviceCIDR)
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("--cluster-dns-port %d: want 1-65535", c.Port)
	case !isDomain(c.Zone):
		return fmt.Errorf("--cluster-domain %q: not a domain name", c.Zone)
	}
	return nil
}

// isDomain says whether s is a domain name of one label or more.
func isDomain(s string) bool {
	n, ok := mdns.IsDomainName(s)
	return ok && n > 0
}
