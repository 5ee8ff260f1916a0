package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/apiclient"
	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/nodestatus"
	"github.com/skiffnode/skiff/objects"
	"github.com/skiffnode/skiff/podlogs"
	"github.com/skiffnode/skiff/probes"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/containerd"
	"github.com/skiffnode/skiff/runtime/cri"
	"github.com/skiffnode/skiff/server"
	"github.com/skiffnode/skiff/staticpods"
	"github.com/skiffnode/skiff/volumes"
)

// agentOptions are `skiff agent` flags; names follow the kubelet's.
type agentOptions struct {
	podManifestPath   string
	runtimeEndpoint   string
	rootDir           string
	hostnameOverride  string
	podLogsDir        string
	readOnlyPort      int
	address           string
	verbosity         int
	podCIDR           string
	cniBinDir         string
	pauseBinary       string
	resolvConf        string
	clusterDomain     string
	runtimeTimeout    time.Duration
	maxParallelStarts int
	maxParallelProbes int
	resources         resourceOptions
	security          securityOptions
	pull              pullOptions
	registry          registryOptions
	gc                gcOptions
	api               apiOptions
	controlPlane      controlPlaneOptions
	kubeletAPI        kubeletAPIOptions
	shutdown          shutdownOptions
	config            configOptions
}

func newAgentCmd() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.config.load(cmd.Flags()); err != nil {
				return err
			}
			// The kubelet API serves a node of an API server (--kubeconfig,
			// or its own with --control-plane); without one it listens
			// only where --port asks for it (see ARCHITECTURE.md,
			// "The kubelet API").
			joins := o.api.kubeconfig != "" || o.controlPlane.enabled
			o.kubeletAPI.resolve(cmd.Flags(), joins, o.controlPlane.enabled)
			if o.config.write {
				return o.config.writeConfig(cmd.OutOrStdout(), cmd.Flags(), newAgentCmd().Flags())
			}
			return runAgent(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.podManifestPath, "pod-manifest-path", "", "directory of static pod manifests to run")
	f.StringVar(&o.runtimeEndpoint, "container-runtime-endpoint", "", "CRI endpoint (unix:///path); empty starts a managed containerd")
	f.StringVar(&o.rootDir, "root-dir", defaultRootDir, "directory for skiff's state, the managed containerd and image archives")
	f.StringVar(&o.hostnameOverride, "hostname-override", "", "node name to use instead of the hostname")
	f.StringVar(&o.podLogsDir, "pod-logs-dir", podlogs.DefaultRoot, "directory for container logs")
	f.IntVar(&o.readOnlyPort, "read-only-port", 0, "TCP port for the read-only local API (0 disables)")
	f.StringVar(&o.address, "address", "127.0.0.1", "IP address for --read-only-port")
	f.IntVar(&o.verbosity, "v", 0, "log verbosity (4 and above: debug)")
	f.StringVar(&o.podCIDR, "pod-cidr", "10.88.0.0/16", "pod IP range of the managed CNI bridge")
	f.StringVar(&o.cniBinDir, "cni-bin-dir", "/usr/lib/cni", "CNI plugin binaries for the managed containerd")
	f.StringVar(&o.pauseBinary, "pause-binary", "", "static executable the managed containerd's pause image is built from (default: skiff's built-in pause on amd64 and arm64, else skiff-pause beside this executable, else this executable if static)")
	f.StringVar(&o.resolvConf, "resolv-conf", "/etc/resolv.conf", "resolver configuration pods inherit")
	f.StringVar(&o.clusterDomain, "cluster-domain", agent.DefaultClusterDomain, "DNS domain of the cluster: the FQDN of a pod with spec.subdomain is <hostname>.<subdomain>.<namespace>.svc.<cluster-domain>")
	f.DurationVar(&o.runtimeTimeout, "runtime-request-timeout", 2*time.Minute, "timeout of CRI requests")
	f.IntVar(&o.maxParallelStarts, "max-parallel-starts", 0, "upper bound of sandboxes/containers started (and sandboxes torn down) at once; the number adapts to the runtime's throughput from max(2, CPUs) up to it (0: 4*CPUs within [16, 64]; N <= max(2, CPUs): fixed N)")
	f.IntVar(&o.maxParallelProbes, "max-parallel-exec-probes", 0, "exec probes running at once (0: max(2, CPUs); -1: no bound)")
	r := &o.resources
	f.StringVar(&r.cgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver: cgroupfs or systemd (the runtime must use the same)")
	f.StringVar(&r.cgroupRoot, "cgroup-root", "/", "cgroup under which kubepods is created")
	f.BoolVar(&r.cgroupsPerQOS, "cgroups-per-qos", true, "create QoS and pod-level cgroups")
	f.StringVar(&r.systemReserved, "system-reserved", "", "resources reserved for the system, e.g. cpu=100m,memory=256Mi")
	f.StringVar(&r.kubeReserved, "kube-reserved", "", "resources reserved for skiff and the runtime, e.g. cpu=100m,memory=256Mi")
	f.StringVar(&r.evictionHard, "eviction-hard", "memory.available<100Mi", "hard eviction threshold subtracted from allocatable (memory.available only)")
	f.Int64Var(&r.maxPods, "max-pods", agent.DefaultMaxPods, "number of pods this node admits")
	f.Int64Var(&r.podMaxPids, "pod-max-pids", -1, "pids.max of each pod cgroup (-1: unlimited)")
	addSecurityFlags(f, &o.security)
	addPullFlags(f, &o.pull)
	addRegistryFlags(f, &o.registry)
	addGCFlags(f, &o.gc)
	addAPIFlags(f, &o.api)
	addControlPlaneFlags(f, &o.controlPlane)
	addKubeletAPIFlags(f, &o.kubeletAPI)
	addShutdownFlags(f, &o.shutdown)
	addConfigFlags(f, &o.config)
	return cmd
}

func newLogger(verbosity int) *slog.Logger {
	level := slog.LevelInfo
	if verbosity >= 4 {
		level = slog.LevelDebug
	}
	return slog.New(logHandler(&slog.HandlerOptions{Level: level}))
}

func nodeName(override string) (string, error) {
	if override != "" {
		return strings.ToLower(override), nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return strings.ToLower(h), nil
}

// agentGCPercent is the agent's GOGC unless the environment sets one. The
// agent allocates little at steady state (status and CRI replies), so a
// tighter heap goal costs little CPU and keeps a node agent's memory low:
// with 110 pods its RSS was 48-52 MB at GOGC=100 (issue 5: under 50 MB).
const agentGCPercent = 50

// agentMaxProcs is the agent's GOMAXPROCS unless the environment sets one.
// The agent waits on the runtime almost all the time and uses a few
// percent of one core even when 250 pods start or go at once; with one P
// per core, each of its ~15 wake-ups a second (probe ticks, CRI replies,
// the relist) also woke idle Ps that spun looking for work. One P: steady
// CPU with 110 pods 4.3 -> 3.4 % of a core and RSS 47 -> 43 MB (issue 5).
// containerd's shims cap theirs at 2 for the same kind of reason
// (runtime/v2/shim: fewer Go stacks). Go preempts a long-running
// goroutine after 10 ms, so a slow list decode cannot stall probes for
// longer than that.
const agentMaxProcs = 1

// tuneGoRuntime applies agentGCPercent and agentMaxProcs where the
// environment does not set GOGC or GOMAXPROCS.
func tuneGoRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(agentGCPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		goruntime.GOMAXPROCS(agentMaxProcs)
	}
}

func runAgent(ctx context.Context, o *agentOptions) error {
	if o.maxParallelStarts < 0 {
		return fmt.Errorf("--max-parallel-starts %d: want 0 (adaptive, the default) or a positive upper bound", o.maxParallelStarts)
	}
	if err := o.pull.config().Validate(); err != nil {
		return err
	}
	if err := o.gc.validate(); err != nil {
		return err
	}
	if err := o.shutdown.resolve(); err != nil {
		return err
	}
	if err := o.controlPlane.validate(&o.api); err != nil {
		return err
	}
	if err := o.kubeletAPI.validate(o.api.kubeconfig != "" || o.controlPlane.enabled); err != nil {
		return err
	}
	if o.api.bootstrap != "" && o.api.kubeconfig == "" {
		return errors.New("--bootstrap-kubeconfig needs --kubeconfig: the path the node's kubeconfig is written to")
	}
	if o.api.rotateCerts && o.api.kubeconfig == "" {
		return errors.New("--rotate-certificates needs --kubeconfig: it renews that kubeconfig's client certificate")
	}
	log := newLogger(o.verbosity)
	notifier := newNotifier(log) // before any child process starts
	tuneGoRuntime()
	node, err := nodeName(o.hostnameOverride)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.rootDir, 0o700); err != nil {
		return fmt.Errorf("--root-dir: %w", err)
	}
	if err := o.registry.resolve(o.rootDir, o.runtimeEndpoint, log); err != nil {
		return err
	}
	allocatable, kubepods, err := nodeResources(&o.resources)
	if err != nil {
		return err
	}
	// The control plane (--control-plane) stops after the runtime's
	// clean-up, which the agent's last status updates may need.
	stopControlPlane, err := o.controlPlane.start(ctx, o.rootDir, node, &o.api, &o.kubeletAPI, log)
	if err != nil {
		return err
	}
	defer stopControlPlane()
	deps, err := startRuntime(ctx, o, log)
	if err != nil {
		return err
	}
	defer deps.cleanup()
	// Everything but the cgroup driver check (setupCgroups, once) calls
	// the runtime through the metrics' decorator (runtime operations).
	mx, err := newAgentMetrics(node)
	if err != nil {
		return err
	}
	rt, importer := mx.kubelet.InstrumentRuntime(deps.rt), deps.importer
	// The puller's pulls end when their callers (the pod workers) return;
	// it is waited for before the runtime closes.
	puller, err := o.pull.puller(rt)
	if err != nil {
		return err
	}
	defer puller.Wait()
	cgm, err := setupCgroups(ctx, &o.resources, kubepods, deps.rt, log)
	if err != nil {
		return err
	}
	var podCgroups agent.PodCgroups
	if cgm != nil {
		podCgroups = cgm
	}
	hostIPs := nodeIPs(log)
	// The prober, the start gate it yields to and the event recorder are
	// shared by the agent and the prober; probe results reach the agent as
	// pod UIDs on changes, which agent.Run drains. The prober stops after
	// everything under the errgroup below returned, before the runtime.
	starts := agent.NewStartGate(o.maxParallelStarts)
	// store holds the ConfigMaps and Secrets that pods may use; the
	// static-pod source fills it.
	store := objects.NewStore()
	events := agent.NewEventRecorder(clock.RealClock{}, node)
	shutdown, err := o.shutdown.newManager(o.rootDir, events, mx.reg, log)
	if err != nil {
		return err
	}
	// The API source (--kubeconfig): its status manager learns each pod
	// the agent publishes, through Config.PodChanged.
	var api *apiSource
	apiPods := &lateBoundPods{}
	var podChanged func(types.UID)
	if o.api.kubeconfig != "" {
		if o.api.bootstrap != "" {
			certDir := o.kubeletAPI.certDir
			if certDir == "" {
				certDir = filepath.Join(o.rootDir, "pki")
			}
			if err := bootstrapClientCert(ctx, o.api.kubeconfig, o.api.bootstrap, certDir, node, log); err != nil {
				return err
			}
		}
		ips, err := nodeIPsFlag(o.api.nodeIP, hostIPs)
		if err != nil {
			return err
		}
		capacity, err := agent.NodeCapacity("/proc/meminfo", o.resources.maxPods)
		if err != nil {
			return err
		}
		facts := withShutdownStatus(nodeFacts(rt, node, o.rootDir, capacity, allocatable, ips, int32(o.kubeletAPI.port), log), shutdown)
		if api, err = o.api.newAPISource(node, apiPods, facts, events, log); err != nil {
			return err
		}
		podChanged = api.status.PodChanged
	}
	// objs: the static objects, then (with an API server) the objects the
	// API pods reference; objChanges fires when any of them changed (or a
	// service account token is due for renewal).
	var objs objects.Getter = store
	objChanges := store.Subscribe()
	var tokens volumes.TokenSource
	var fanIn func(context.Context)
	var services agent.ServiceEnv // nil interface without an API server
	if api != nil {
		services = api.services
		objs, tokens = objects.Chain(store, api.objects), api.tokens
		merged := make(chan struct{}, 1)
		fanIn = signalFanIn(merged, objChanges, api.objects.Changes(), api.tokens.Changes())
		objChanges = merged
	}
	// creds: the pods' imagePullSecrets (from objs), then the node's
	// docker config file.
	creds, err := o.registry.credentials(o.rootDir, objs, log)
	if err != nil {
		return err
	}
	// vols owns the pods' volumes under <root-dir>/pods; it reads the
	// store, and rewrites object-backed volumes when the store changes.
	vols, err := volumes.New(volumes.Config{
		PodsDir: filepath.Join(o.rootDir, "pods"), Objects: objs, Tokens: tokens, Allocatable: allocatable, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := vols.EnsureShared(); err != nil {
		log.Warn("volume mounts with mountPropagation HostToContainer or Bidirectional will fail", "err", err)
	}
	changes := make(chan types.UID, 64)
	prober := probes.NewManager(probes.Config{
		Exec: rt, Logger: log, Changes: changes, Events: events.ContainerEvent, StartsIdle: starts.Idle,
		MaxConcurrentExec: parallelExecProbes(o.maxParallelProbes),
		CheckpointPath:    filepath.Join(o.rootDir, "probes.json"),
		TickGrid:          time.Second,
	})
	defer prober.Stop()
	agentRT, err := withHangHook(rt, log)
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{
		NodeName:          node,
		Runtime:           agentRT,
		Exits:             deps.exits,
		PodLogsDir:        o.podLogsDir,
		PodsDir:           filepath.Join(o.rootDir, "pods"),
		HostIPs:           hostIPs,
		DNS:               podDNS(o.resolvConf),
		Logger:            log,
		MaxParallelStarts: o.maxParallelStarts,
		Starts:            starts,
		Events:            events,
		Prober:            prober,
		ProbeChanges:      changes,
		Cgroups:           podCgroups,
		NodeUsage:         readNodeUsage,
		Allocatable:       allocatable,
		Objects:           objs,
		Services:          services,
		Volumes:           vols,
		ObjectChanges:     objChanges,
		Security:          o.security.config(o.rootDir),
		ClusterDomain:     o.clusterDomain,
		Puller:            puller,
		Credentials:       creds,
		ContainerGC:       &o.gc.container,
		ContainerGCPeriod: o.gc.containerGCPeriod,
		PodChanged:        podChanged,
		Metrics:           mx.kubelet,
		Admitters:         []agent.PodAdmitter{shutdown.Admit},
	})
	if err != nil {
		return err
	}
	if err := mx.addAgent(a); err != nil {
		return err
	}
	apiPods.a = a
	// The image GC and the log rotator (see gc.go); they run under the
	// errgroup below.
	var keep []string
	if deps.sandboxImage != "" {
		keep = append(keep, deps.sandboxImage)
	}
	imageGC, runGC, err := o.gc.gcLoops(rt, keep, events.NodeEvent, log)
	if err != nil {
		return err
	}
	sources := map[string]agent.Source{}
	if o.podManifestPath != "" {
		src, err := staticpods.New(staticpods.Config{Dir: o.podManifestPath, NodeName: node, Logger: log, Objects: store})
		if err != nil {
			return fmt.Errorf("--pod-manifest-path: %w", err)
		}
		sources["file"] = src
	}
	if api != nil {
		if src, ok := sources["file"]; ok {
			sources["file"] = api.mirror.Wrap(src)
		}
		sources["api"] = api.source
	}
	// Everything below runs under one errgroup: the first to fail stops the
	// others, and runAgent returns only after all of them returned. Then,
	// in reverse order of start, the prober stops (deferred above) and the
	// runtime closes (deps.cleanup), so no worker, probe or API request is
	// still in a runtime call when the CRI connection closes.
	g, gctx := errgroup.WithContext(ctx)
	apiCfg := server.Config{
		Pods: a, PodLogsDir: o.podLogsDir, Logger: log, Events: a,
		Healthz: func() error { return a.Healthz(gctx) },
		Metrics: mx.handler(log),
	}
	if cgm != nil {
		apiCfg.Stats = a
	}
	// The read-only TCP port, like the kubelet's, never runs commands in
	// containers: only the root-only unix socket serves /run.
	roSrv := server.New(apiCfg)
	apiCfg.Exec = a
	withStreaming(&apiCfg, rt)
	// Image pulls and removals, like /run, only on the unix socket.
	apiCfg.Images = newAgentImages(rt, importer, agentImagesDeps{
		puller: puller, creds: creds, records: imageGC.Records, keep: keep, wake: a.WakeAll,
	})
	apiCfg.Profiling = true
	var apiClient *apiclient.Client
	var clusterCA []byte
	if api != nil {
		apiClient, clusterCA = api.client, api.clusterCA
	}
	kubeletAPI, err := o.kubeletAPI.newKubeletAPI(kubeletAPIDeps{
		RootDir: o.rootDir, NodeName: node, Config: apiCfg, Client: apiClient, ClusterCA: clusterCA, Logger: log,
	})
	if err != nil {
		return err
	}
	if kubeletAPI != nil {
		g.Go(func() error { return kubeletAPI.serve(gctx) })
	}
	srv := server.New(apiCfg)
	g.Go(func() error { return srv.ServeUnix(gctx, filepath.Join(o.rootDir, "skiff.sock")) })
	if o.readOnlyPort > 0 {
		addr := net.JoinHostPort(o.address, strconv.Itoa(o.readOnlyPort))
		g.Go(func() error { return roSrv.ServeTCP(gctx, addr) })
	}
	if importer != nil {
		g.Go(func() error {
			watchImageDir(gctx, filepath.Join(o.rootDir, "images"), importer, a.WakeAll, log)
			return nil
		})
	}
	g.Go(func() error { runGC(gctx); return nil })
	if api != nil {
		for _, run := range append(api.loops(), fanIn) {
			g.Go(func() error { run(gctx); return nil })
		}
	}
	log.Info("skiff agent started", "node", node, "manifests", o.podManifestPath, "root", o.rootDir, "hostIPs", hostIPs)
	g.Go(func() error { return a.Run(gctx, sources) })
	g.Go(func() error { return runShutdown(shutdown, a)(gctx) })
	g.Go(func() error { notifySystemd(gctx, notifier, a, o.runtimeTimeout, log); return nil })
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return err
	}
	log.Info("skiff agent stopping; pods keep running")
	return nil
}

// runtimeDeps is what startRuntime connected to; cleanup closes it all.
type runtimeDeps struct {
	rt       runtime.Runtime
	importer runtime.ImageImporter // nil with an external runtime
	exits    runtime.ExitWatcher   // nil where the runtime has none
	// sandboxImage is the managed containerd's pause image ("" with an
	// external runtime).
	sandboxImage string
	cleanup      func()
}

// startRuntime connects to the CRI runtime: the endpoint given, or a managed
// containerd (with skiff's pause image and the CNI bridge config). Archives in
// <root-dir>/images are imported before any pod starts. On error everything
// acquired is released again.
func startRuntime(ctx context.Context, o *agentOptions, log *slog.Logger) (_ *runtimeDeps, retErr error) {
	var closers []func()
	deps := &runtimeDeps{cleanup: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	defer func() {
		if retErr != nil {
			deps.cleanup()
		}
	}()
	endpoint, what := o.runtimeEndpoint, "--container-runtime-endpoint "+o.runtimeEndpoint
	containerdAddr := strings.TrimPrefix(endpoint, "unix://")
	if endpoint == "" {
		m, imp, pause, err := startManaged(ctx, o, log)
		if err != nil {
			return nil, err
		}
		deps.sandboxImage = pause
		closers = append(closers, func() { stopManaged(m, log) }, func() { _ = imp.Close() })
		deps.importer = imp
		endpoint, what, containerdAddr = m.Endpoint(), "managed containerd", m.Address()
	}
	rt, err := cri.New(ctx, endpoint, o.runtimeTimeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	closers = append(closers, func() { _ = rt.Close() })
	deps.rt = rt
	// Exit events only speed up what the relister finds anyway: without
	// them (another CRI runtime, an old containerd) skiff still works.
	if v, err := rt.Version(ctx); err == nil && v.Name == "containerd" {
		ew, err := containerd.NewExitWatcher(containerdAddr, log)
		if err != nil {
			log.Warn("no container exit events; exits are seen at the next relist", "err", err)
		} else {
			closers = append(closers, func() { _ = ew.Close() })
			deps.exits = ew
		}
	}
	return deps, nil
}

func startManaged(ctx context.Context, o *agentOptions, log *slog.Logger) (m *containerd.Managed, imp *containerd.Importer, pauseImage string, retErr error) {
	pauseSrc, err := pauseExecutable(o.pauseBinary, goruntime.GOARCH, log)
	if err != nil {
		return nil, nil, "", err
	}
	pauseRef, err := pauseSrc.ref()
	if err != nil {
		return nil, nil, "", err
	}
	cniDir := filepath.Join(o.rootDir, "cni", "net.d")
	if _, err := network.WriteBridgeConflist(cniDir, network.BridgeConfig{PodCIDR: o.podCIDR}); err != nil {
		return nil, nil, "", fmt.Errorf("CNI config: %w", err)
	}
	regHosts, regAuths := o.registry.containerdRegistry()
	started, err := containerd.Start(ctx, containerd.Config{
		RootDir: o.rootDir, CNIBinDir: o.cniBinDir, CNIConfDir: cniDir, SandboxImage: pauseRef, Logger: log,
		SystemdCgroup: o.resources.cgroupDriver == string(cgroups.DriverSystemd),
		RegistryHosts: regHosts, RegistryAuths: regAuths, Ready: cri.Ping,
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("start managed containerd: %w", err)
	}
	// Roll back with the local: the returns below set the named m to nil.
	defer func() {
		if retErr != nil {
			stopManaged(started, log)
		}
	}()
	m = started
	imp, err = containerd.NewImporter(m.Address())
	if err != nil {
		return nil, nil, "", err
	}
	if _, err := pauseSrc.ensure(ctx, imp, filepath.Join(o.rootDir, "cache")); err != nil {
		_ = imp.Close()
		return nil, nil, "", fmt.Errorf("pause image: %w", err)
	}
	dir := filepath.Join(o.rootDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		_ = imp.Close()
		return nil, nil, "", fmt.Errorf("image archive directory: %w", err)
	}
	names, err := imp.ImportDir(ctx, dir)
	if err != nil {
		log.Error("importing image archives", "dir", dir, "err", err)
	}
	log.Info("managed containerd ready", "endpoint", m.Endpoint(), "pauseImage", pauseRef, "pauseFrom", pauseSrc.String(), "imported", names)
	return m, imp, pauseRef, nil
}

func stopManaged(m *containerd.Managed, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		log.Warn("stopping managed containerd", "err", err)
	}
}

func nodeIPs(log *slog.Logger) []string {
	ips, err := network.NodeIPs()
	if err != nil {
		log.Warn("node IPs", "err", err)
	}
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func podDNS(resolvConf string) func(*v1.Pod) (*runtime.DNSConfig, error) {
	return func(pod *v1.Pod) (*runtime.DNSConfig, error) {
		dns, err := network.PodDNS(resolvConf, string(pod.Spec.DNSPolicy), pod.Spec.DNSConfig, pod.Spec.HostNetwork)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return dns, err
	}
}

// parallelExecProbes is --max-parallel-exec-probes with its default.
func parallelExecProbes(flagValue int) int {
	switch {
	case flagValue < 0:
		return 0 // no bound
	case flagValue == 0:
		return max(2, goruntime.NumCPU())
	}
	return flagValue
}

// readNodeUsage reads the machine's cpu and memory use from /proc for the
// summary's node stats (agent.Config.NodeUsage).
func readNodeUsage() (*cgroups.Usage, error) {
	u, err := nodestatus.ReadUsage(os.DirFS("/"))
	if err != nil {
		return nil, fmt.Errorf("node usage: %w", err)
	}
	return &cgroups.Usage{CPUUsageNanoSeconds: u.CPUUsageNanoSeconds, MemoryUsageBytes: u.MemoryUsageBytes, WorkingSetBytes: u.WorkingSetBytes}, nil
}
