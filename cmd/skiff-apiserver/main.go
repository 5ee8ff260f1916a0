// Command skiff-apiserver is skiff's control-plane shim: a Kubernetes API
// server for one node, built on k8s.io/apiserver's generic server, storing
// in an embedded etcd (or an external one). It is a separate executable so
// that the agent neither links nor loads it (see shim/NOTES.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/apiservice"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/crds"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/dns"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/localpath"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/proxy"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/upstream"
	"github.com/skiffnode/skiff/shim/server"
	"github.com/skiffnode/skiff/shim/serviceaccount"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "skiff-apiserver:", err)
		os.Exit(1)
	}
}

// defaultGCPercent is the shim's GOGC. Measured in the benchmark's shim
// scenario (110 pods, 50 Services, 200 ConfigMaps, service proxy and DNS
// on; shim/NOTES.md, Measurements): 25 instead of 50 takes the API
// server's RSS from 142 to 130 MB max (132 to 119 MB mean) and the idle
// node from 172 to 161 MB, with its CPU unchanged (1.32 vs 1.33 % of a
// core); the live heap is ~45 MB, so the GC's goal is the lever.
const defaultGCPercent = 25

// gcSettings applies the GC flags: gcPercent unless the GOGC environment
// variable is set (it wins, as for any Go program), and a soft memory limit
// in MiB when positive. A limit near the live heap makes the GC run
// continuously (30 MiB: 11-13 % of a core idle), so it is off by default.
func gcSettings(gcPercent, memoryLimitMiB int) {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
	if memoryLimitMiB > 0 {
		debug.SetMemoryLimit(int64(memoryLimitMiB) << 20)
	}
}

// defaultFeatureGates are the k8s.io/apiserver feature gates the shim
// changes from upstream's defaults, for memory (shim/NOTES.md,
// Measurements): no btree snapshots of the watch caches for every write
// until the next compaction (ListFromCacheSnapshot: a LIST at an older
// resourceVersion or a continuation is then served by etcd, as before
// 1.34), and no gzip of responses and watch lists (its writers are ~0.5
// MB each, and the shim's clients are on the same machine).
const defaultFeatureGates = "ListFromCacheSnapshot=false,APIResponseCompression=false,WatchListCompression=false"

// setFeatureGates sets k8s.io/apiserver's process-wide feature gates from
// a kube-apiserver style list (Name=bool,...): defaultFeatureGates first,
// then gates, whose entries win.
func setFeatureGates(gates string) error {
	for _, g := range []string{defaultFeatureGates, gates} {
		if g == "" {
			continue
		}
		if err := utilfeature.DefaultMutableFeatureGate.Set(g); err != nil {
			return fmt.Errorf("feature gates %q: %w", g, err)
		}
	}
	return nil
}

// flags are skiff-apiserver's command line.
type flags struct {
	o                         server.Options
	up                        upstream.Config
	serviceProxy              bool
	clusterDNS                dnsFlags
	apiClients                []string
	localPath                 localpath.Config
	gcPercent, memoryLimitMiB int
	featureGates              string
}

func newRootCmd() *cobra.Command {
	fl := &flags{gcPercent: defaultGCPercent}
	cmd := &cobra.Command{
		Use:           "skiff-apiserver",
		Short:         "Serve the Kubernetes API for one skiff node",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return run(cmd.Context(), fl) },
	}
	addFlags(cmd, fl)
	addLogFlags(cmd)
	return cmd
}

// run applies the process settings, assembles the server from fl and
// serves until ctx ends.
func run(ctx context.Context, fl *flags) error {
	gcSettings(fl.gcPercent, fl.memoryLimitMiB)
	if err := setFeatureGates(fl.featureGates); err != nil {
		return err
	}
	o, err := fl.options()
	if err != nil {
		return err
	}
	s, err := server.New(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "skiff-apiserver: serving %s; admin kubeconfig %s\n", s.URL, s.Kubeconfig)
	if s.NodeKubeconfig != "" {
		fmt.Fprintf(os.Stderr, "skiff-apiserver: node %s kubeconfig %s\n", o.NodeName, s.NodeKubeconfig)
	}
	return s.Run(ctx)
}

// options are the server's options: upstream's kinds and controllers,
// the CustomResourceDefinitions server, and the service proxy, cluster
// DNS and local-path provisioner when asked for.
func (fl *flags) options() (server.Options, error) {
	o := fl.o
	if err := upstream.Add(&o, fl.up); err != nil {
		return o, err
	}
	o.Extensions = crds.Server
	if o.NodeName != "" {
		cfg, err := fl.apiService()
		if err != nil {
			return o, err
		}
		// In-cluster clients dial the Service's cluster IP, or its full
		// name (the service-account issuer's host, by default).
		o.ExtraSANs = append(o.ExtraSANs, apiservice.ServiceIP(cfg.ServiceCIDR).String(),
			"kubernetes.default.svc."+strings.TrimSuffix(fl.clusterDNS.zone, "."))
		withRuns(&o, func(cc server.ControllerContext) []func(context.Context) { return apiservice.Runs(cc, cfg) })
	}
	if fl.serviceProxy {
		cfg := proxy.Config{NodeName: o.NodeName, ServiceCIDR: fl.up.ServiceCIDR}
		withRuns(&o, func(cc server.ControllerContext) []func(context.Context) { return proxy.Runs(cc, cfg) })
	}
	if fl.clusterDNS.address != "" {
		cfg, err := fl.clusterDNS.config(o.NodeName, fl.up.ServiceCIDR)
		if err != nil {
			return o, err
		}
		withRuns(&o, func(cc server.ControllerContext) []func(context.Context) { return dns.Runs(cc, cfg) })
	}
	if fl.localPath.Dir != "" {
		cfg := localpath.Config{Dir: fl.localPath.Dir, NodeName: o.NodeName}
		if err := cfg.Validate(); err != nil {
			return o, fmt.Errorf("--local-path-dir: %w", err)
		}
		withRuns(&o, func(cc server.ControllerContext) []func(context.Context) { return localpath.Runs(cc, cfg) })
	}
	return o, nil
}

// apiService is the kubernetes Service's configuration.
func (fl *flags) apiService() (apiservice.Config, error) {
	cidr, err := netip.ParsePrefix(fl.up.ServiceCIDR)
	if err != nil {
		return apiservice.Config{}, fmt.Errorf("--service-cluster-ip-range %q: %w", fl.up.ServiceCIDR, err)
	}
	cfg := apiservice.Config{NodeName: fl.o.NodeName, ServiceCIDR: cidr, BindAddress: fl.o.BindAddress, Port: fl.o.SecurePort}
	for _, c := range fl.apiClients {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return apiservice.Config{}, fmt.Errorf("--kubernetes-service-clients %q: not a CIDR", c)
		}
		cfg.Clients = append(cfg.Clients, p.Masked())
	}
	return cfg, nil
}

// addFlags binds the command's flags to fl.
func addFlags(cmd *cobra.Command, fl *flags) {
	o, up, clusterDNS := &fl.o, &fl.up, &fl.clusterDNS
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "/var/lib/skiff/apiserver", "state: embedded etcd in <data-dir>/etcd, certificates in <data-dir>/pki, admin.token and admin.kubeconfig")
	f.StringSliceVar(&o.EtcdServers, "etcd-servers", nil, "external etcd client URLs (comma-separated) instead of the embedded etcd")
	f.IntVar(&o.SecurePort, "secure-port", 6443, "HTTPS port of the API")
	f.StringVar(&o.BindAddress, "bind-address", "127.0.0.1", "address the API listens on")
	f.StringSliceVar(&o.ExtraSANs, "tls-san", nil, "extra host names or IPs in the serving certificate (issued again by the same CA at start when it does not name them all)")
	f.StringVar(&o.NodeName, "node-name", "", "node whose identity (system:node:<name>, group system:nodes) gets <data-dir>/node.kubeconfig, for the agent to join with; empty: none")
	f.StringVar(&o.NodeKubeletHost, "node-kubelet-host", "", "host at which the kubelet of --node-name is reached (logs, exec, attach, port-forward) instead of that Node's addresses, on the Node's kubelet port; empty: its addresses")
	f.StringVar(&o.KubeletCAFile, "kubelet-certificate-authority", "", "CA bundle to verify kubelets' serving certificates with (logs, exec, attach, port-forward); empty: not verified, as kube-apiserver")
	f.StringVar(&o.ServiceAccountIssuer, "service-account-issuer", serviceaccount.DefaultIssuer, "\"iss\" of the service-account tokens the shim signs (serviceaccounts/token) and the API's audience, as kube-apiserver's --service-account-issuer")
	f.StringVar(&up.ServiceCIDR, "service-cluster-ip-range", upstream.DefaultServiceCIDR, "IPv4 range (CIDR) the Services' cluster IPs are allocated from")
	f.StringVar(&up.NodePortRange, "service-node-port-range", upstream.DefaultNodePortRange, "range of the Services' node ports (first-last)")
	f.StringSliceVar(&fl.apiClients, "kubernetes-service-clients", nil, "networks (CIDRs), the pods', whose clients may reach the API on the node's address, the endpoint of the kubernetes Service published with --node-name; besides the node's address and loopback it refuses every other client there")
	f.BoolVar(&fl.serviceProxy, "service-proxy", false, "run the service proxy (kube-proxy's nftables mode) for --node-name: this machine's nftables then carry the Services' cluster IPs and node ports")
	f.StringVar(&clusterDNS.address, "cluster-dns", "", "serve the cluster DNS for --node-name: the kube-system/kube-dns Service at this cluster IP (in --service-cluster-ip-range), answered by a server on the node's address; empty: none")
	f.StringVar(&clusterDNS.zone, "cluster-domain", dns.DefaultZone, "DNS domain of the cluster the cluster DNS answers")
	f.IntVar(&clusterDNS.port, "cluster-dns-port", dns.DefaultPort, "port of the cluster DNS server on the node's address (UDP and TCP), the kube-dns EndpointSlice's")
	f.StringSliceVar(&clusterDNS.clients, "cluster-dns-clients", nil, "networks (CIDRs) whose clients the cluster DNS answers, the pods'; besides the node's address and loopback it refuses every other client")
	f.StringVar(&clusterDNS.resolvConf, "resolv-conf", "/etc/resolv.conf", "resolver configuration naming the upstream servers the cluster DNS forwards other names to")
	f.StringVar(&fl.localPath.Dir, "local-path-dir", "", "provision PersistentVolumes as directories here, on --node-name's machine, for the default StorageClass \""+localpath.DefaultClassName+"\" (made at start unless it exists); empty: no provisioner and no default class")
	f.IntVar(&fl.gcPercent, "gc-percent", defaultGCPercent, "Go GC target percentage (GOGC); the GOGC environment variable overrides it")
	f.StringVar(&fl.featureGates, "feature-gates", "", "k8s.io/apiserver feature gates (Name=true|false,...), applied over the shim's defaults ("+defaultFeatureGates+")")
	f.IntVar(&fl.memoryLimitMiB, "memory-limit-mib", 0, "Go soft memory limit in MiB (GOMEMLIMIT); 0: none")
}

// addLogFlags adds klog's -v and --vmodule, as kube-apiserver has them
// (e.g. --vmodule=proxier=4 for the service proxy's syncs).
func addLogFlags(cmd *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for _, name := range []string{"v", "vmodule"} {
		cmd.Flags().AddGoFlag(fs.Lookup(name))
	}
}

// withRuns adds the run functions runs returns to o's controllers.
func withRuns(o *server.Options, runs func(server.ControllerContext) []func(context.Context)) {
	build := o.Controllers
	o.Controllers = func(cc server.ControllerContext) ([]func(context.Context), error) {
		var all []func(context.Context)
		if build != nil {
			var err error
			if all, err = build(cc); err != nil {
				return nil, err
			}
		}
		return append(all, runs(cc)...), nil
	}
}

// dnsFlags are the cluster DNS's flags.
type dnsFlags struct {
	address, zone, resolvConf string
	port                      int
	clients                   []string
}

// config is the cluster DNS's configuration for node, whose address must
// be in serviceCIDR.
func (f dnsFlags) config(node, serviceCIDR string) (dns.Config, error) {
	ip, err := netip.ParseAddr(f.address)
	if err != nil {
		return dns.Config{}, fmt.Errorf("--cluster-dns %q: not an IP address", f.address)
	}
	cidr, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return dns.Config{}, fmt.Errorf("--service-cluster-ip-range %q: %w", serviceCIDR, err)
	}
	cfg := dns.Config{NodeName: node, ServiceIP: ip, Zone: f.zone, Port: f.port, ResolvConf: f.resolvConf}
	for _, c := range f.clients {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return dns.Config{}, fmt.Errorf("--cluster-dns-clients %q: not a CIDR", c)
		}
		cfg.Clients = append(cfg.Clients, p.Masked())
	}
	return cfg, cfg.Validate(cidr)
}
