package node

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/images"
	imageservice "github.com/skiffnode/skiff/images/service"
	"github.com/skiffnode/skiff/internal/credentials"
	"github.com/skiffnode/skiff/internal/diskpressure"
	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/nodeshutdown"
	"github.com/skiffnode/skiff/probes"
	"github.com/skiffnode/skiff/staticpods"
	"github.com/skiffnode/skiff/volumes"
)

// apiPhase is what the agent shares with the API source and node shutdown.
type apiPhase struct {
	hostIPs []string
	// starts is the start gate the agent's workers and the prober share.
	starts *startgate.Gate
	// store holds the ConfigMaps and Secrets beside static pods; the
	// static-pod source fills it.
	store    *objects.Store
	events   *events.Recorder
	shutdown *nodeshutdown.Manager
	// disk decides DiskPressure (the node status) and records its events.
	disk *diskpressure.Monitor
	// source is the API source (--kubeconfig); nil without an API server.
	source *apiSource
	// pods is the agent, bound once it exists: the API source's status
	// manager asks it for pods, and the agent needs the status manager's
	// callback first.
	pods *lateBoundPods
}

// newAPI is the API-source phase: the event recorder, node shutdown and,
// with an API server, the API source (TLS bootstrap first).
func (n *Node) newAPI(ctx context.Context) error {
	p := &apiPhase{
		hostIPs: nodeIPs(n.log),
		starts:  startgate.New(n.cfg.MaxParallelStarts),
		store:   objects.NewStore(),
		events:  events.NewRecorder(clock.RealClock{}, n.name),
		pods:    &lateBoundPods{},
	}
	n.api = p
	shutdown, err := n.cfg.Shutdown.newManager(n.cfg.RootDir, p.events, n.rt.mx.reg, n.log)
	if err != nil {
		return err
	}
	p.shutdown = shutdown
	o := &n.cfg
	p.disk = diskpressure.New(diskpressure.Config{Paths: n.diskPaths(), Event: p.events.NodeEvent, Logger: n.log})
	n.loopNoErr("disk pressure", p.disk.Run)
	if !o.API.OfflinePods {
		if err := removeOfflineCopy(o.RootDir, n.log); err != nil {
			return err
		}
	}
	if o.API.Kubeconfig == "" {
		return nil
	}
	if o.API.Bootstrap != "" {
		certDir := o.KubeletAPI.CertDir
		if certDir == "" {
			certDir = filepath.Join(o.RootDir, "pki")
		}
		if err := bootstrapClientCert(ctx, o.API.Kubeconfig, o.API.Bootstrap, certDir, n.name, n.log); err != nil {
			return err
		}
	}
	ips, err := nodeIPsFlag(o.API.NodeIP, p.hostIPs)
	if err != nil {
		return err
	}
	capacity, err := agent.NodeCapacity("/proc/meminfo", o.Resources.MaxPods)
	if err != nil {
		return err
	}
	facts := withDiskPressure(withShutdownStatus(nodeFacts(n.rt.rt, n.name, o.RootDir, capacity, n.allocatable, ips, int32(o.KubeletAPI.Port), n.declared.Declared(), n.log), shutdown), p.disk)
	p.source, err = o.API.newAPISource(n.name, o.RootDir, p.pods, facts, p.events, n.log)
	return err
}

// storagePhase is what the pods' volumes and image pulls read.
type storagePhase struct {
	// objs: the static objects, then (with an API server) the objects the
	// API pods reference; changes fires when any of them changed (or a
	// service account token is due for renewal, a ClusterTrustBundle
	// changed, or a pod certificate was issued or is due for renewal).
	objs    objects.Getter
	changes <-chan struct{}
	// creds: the pods' imagePullSecrets (from objs), then the node's
	// docker config file.
	creds *credentials.Provider
	// vols owns the pods' volumes under <root-dir>/pods.
	vols *volumes.Manager
}

// newStorage is the storage phase: the objects pods reference, registry
// credentials and the volume manager.
func (n *Node) newStorage(context.Context) error {
	p := &storagePhase{objs: n.api.store, changes: n.api.store.Subscribe()}
	var (
		tokens   volumes.TokenSource
		bundles  volumes.TrustBundleSource
		podCerts volumes.PodCertificateSource
		claims   volumes.ClaimSource
	)
	if api := n.api.source; api != nil {
		p.objs, tokens, bundles, podCerts, claims = objects.Chain(n.api.store, api.objects), api.tokens, api.trustBundles, api.podCerts, api.claims
		merged := make(chan struct{}, 1)
		n.loopNoErr("object changes fan-in", signalFanIn(merged, p.changes, api.objects.Changes(), api.tokens.Changes(),
			api.trustBundles.Changes(), api.podCerts.Changes()))
		p.changes = merged
	}
	creds, err := n.cfg.Registry.credentials(n.cfg.RootDir, p.objs, n.log)
	if err != nil {
		return err
	}
	p.creds = creds
	p.vols, err = volumes.New(volumes.Config{
		PodsDir: filepath.Join(n.cfg.RootDir, "pods"), Objects: p.objs, Tokens: tokens, TrustBundles: bundles, PodCertificates: podCerts, Claims: claims,
		Allocatable: n.allocatable, Logger: n.log,
		RefreshFailed: func(pod *v1.Pod, err *volumes.SetUpError) {
			n.api.events.PodEvent(pod, v1.EventTypeWarning, agent.EventFailedMount, err.Error())
		},
	})
	if err != nil {
		return err
	}
	if err := p.vols.EnsureShared(); err != nil {
		n.log.Warn("volume mounts with mountPropagation HostToContainer or Bidirectional will fail", "err", err)
	}
	n.stor = p
	return nil
}

// agentPhase is the agent and what runs beside it.
type agentPhase struct {
	hostIPs []string
	agent   *agent.Agent
	imageGC *images.GC
	// keep are the images image GC and `skiff images rm` never remove.
	keep    []string
	sources map[string]agent.Source
}

// newAgent is the agent phase: the prober, the agent, the image GC and log
// rotation, and the pod sources.
func (n *Node) newAgent(ctx context.Context) error {
	o, rt, api := &n.cfg, n.rt, n.api
	changes := make(chan types.UID, 64)
	prober := probes.NewManager(probes.Config{
		Exec: rt.rt, Logger: n.log, Changes: changes, Events: api.events.ContainerEvent, StartsIdle: api.starts.Idle,
		MaxConcurrentExec: parallelExecProbes(o.MaxParallelProbes),
		CheckpointPath:    filepath.Join(o.RootDir, "probes.json"),
		TickGrid:          time.Second,
	})
	// The prober stops after every loop returned, before the runtime.
	n.onClose(prober.Stop)
	a, err := n.buildAgent(ctx, prober, changes)
	if err != nil {
		return err
	}
	if err := rt.mx.addAgent(a); err != nil {
		return err
	}
	api.pods.a = a
	p := &agentPhase{hostIPs: api.hostIPs, agent: a, sources: map[string]agent.Source{}}
	if rt.deps.sandboxImage != "" {
		p.keep = append(p.keep, rt.deps.sandboxImage)
	}
	imageGC, runGC, err := o.GC.gcLoops(rt.rt, p.keep, api.events.NodeEvent, n.log)
	if err != nil {
		return err
	}
	p.imageGC = imageGC
	if o.PodManifestPath != "" {
		src, err := staticpods.New(staticpods.Config{Dir: o.PodManifestPath, NodeName: n.name, Logger: n.log, Objects: api.store})
		if err != nil {
			return fmt.Errorf("--pod-manifest-path: %w", err)
		}
		p.sources["file"] = src
	}
	if api.source != nil {
		if src, ok := p.sources["file"]; ok {
			p.sources["file"] = api.source.mirror.Wrap(src)
		}
		p.sources["api"] = api.source.source
	}
	n.ag = p
	if importer := rt.deps.importer; importer != nil {
		n.loopNoErr("image archive directory", func(ctx context.Context) {
			imageservice.WatchArchiveDir(ctx, filepath.Join(o.RootDir, "images"), importer, a.WakeAll, n.log)
		})
	}
	n.loopNoErr("image GC and log rotation", runGC)
	if api.source != nil {
		for _, l := range api.source.loops() {
			n.loopNoErr("API source: "+l.name, l.run)
		}
	}
	n.loop("agent", func(ctx context.Context) error { return a.Run(ctx, p.sources) })
	n.loop("node shutdown", runShutdown(api.shutdown, a))
	n.loopNoErr("systemd notify", func(ctx context.Context) {
		notifySystemd(ctx, n.notifier, a, o.RuntimeTimeout, n.log)
	})
	return nil
}

// buildAgent builds the agent from the phases before it.
func (n *Node) buildAgent(ctx context.Context, prober *probes.Manager, changes chan types.UID) (*agent.Agent, error) {
	o, rt, api, stor := &n.cfg, n.rt, n.api, n.stor
	agentRT, err := withHangHook(rt.rt, n.log)
	if err != nil {
		return nil, err
	}
	var podCgroups agent.PodCgroups
	if rt.cgroups != nil {
		podCgroups = rt.cgroups
	}
	usernsMgr, err := newUserNamespaces(o.RootDir, o.Resources.MaxPods)
	if err != nil {
		return nil, err
	}
	features, rtName := runtimeFeatures(ctx, rt.deps.rt)
	n.log.Info("runtime features", "runtime", rtName, "userNamespaces", features.UserNamespaces,
		"imageVolumes", features.ImageVolumes, "recursiveReadOnlyMounts", features.RecursiveReadOnlyMounts,
		"supplementalGroupsPolicy", features.SupplementalGroupsPolicy)
	mode, err := cgroups.DetectMode(cgroups.UnifiedMountpoint)
	if err != nil {
		return nil, err
	}
	var podChanged func(types.UID)
	var services agent.ServiceEnv // nil interface without an API server
	var currentNode func() *v1.Node
	if api.source != nil {
		podChanged, services = api.source.status.PodChanged, api.source.services
		currentNode = api.source.node.Node
	}
	return agent.New(agent.Config{
		NodeName:          n.name,
		Runtime:           agentRT,
		Exits:             rt.deps.exits,
		PodLogsDir:        o.PodLogsDir,
		PodsDir:           filepath.Join(o.RootDir, "pods"),
		HostIPs:           api.hostIPs,
		DNS:               podDNS(o.ResolvConf, network.ClusterDNS{Servers: o.ClusterDNS, Domain: o.ClusterDomain}),
		Logger:            n.log,
		MaxParallelStarts: o.MaxParallelStarts,
		Starts:            api.starts,
		Events:            api.events,
		Prober:            prober,
		ProbeChanges:      changes,
		Cgroups:           podCgroups,
		NodeUsage:         nodeUsage(rt.cgroups != nil && rt.cgroups.Mode() == cgroups.V2),
		Allocatable:       n.allocatable,
		DeclaredFeatures:  n.declared,
		Objects:           stor.objs,
		Services:          services,
		Volumes:           agentVolumes{stor.vols},
		ObjectChanges:     stor.changes,
		Security:          o.Security.config(o.RootDir),
		ClusterDomain:     o.ClusterDomain,
		Puller:            rt.puller,
		Credentials:       stor.creds,
		ContainerGC:       &o.GC.Container,
		ContainerGCPeriod: o.GC.ContainerGCPeriod,
		PodChanged:        podChanged,
		Metrics:           rt.mx.kubelet,
		Admitters: []agent.PodAdmitter{nodeAffinityAdmitter(currentNode, registeredNode(n.name, o.API.NodeLabels)),
			featureAdmitter(features, rtName), api.shutdown.Admit, diskPressureAdmitter(api.disk)},
		RuntimeFeatures: features,
		UserNamespaces:  usernsMgr,
		OOMGroupKill:    oomGroupKill(mode, o.Resources.SingleProcessOOMKill),

		MaxContainerRestartPeriod: o.MaxContainerRestartPeriod,
		CPUCFSQuotaPeriod:         o.Resources.CPUCFSQuotaPeriod,
		MemoryThrottlingFactor:    memoryThrottlingFactor(mode, o.Resources.MemoryThrottlingFactor),
		AllocatableAbsoluteMemory: n.kubepods.Memory,
	})
}
