package main

import (
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/internal/systemd"
	"github.com/skiffnode/skiff/node"
)

// agentFlags are `skiff agent`'s flags: the node's configuration and the
// configuration file's own flags.
type agentFlags struct {
	node node.Config
	file configOptions
}

func newAgentCmd() *cobra.Command { return newAgentCmdWith(&agentFlags{}) }

// newAgentCmdWith is `skiff agent` parsing its flags into o.
func newAgentCmdWith(o *agentFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			if o.file.write {
				return o.file.writeConfig(cmd.OutOrStdout(), cmd.Flags(), newAgentCmd().Flags())
			}
			log := newLogger(o.node.Verbosity)
			tuneGoRuntime()
			return node.Run(cmd.Context(), o.node, log)
		},
	}
	f := cmd.Flags()
	addAgentFlags(f, &o.node)
	addResourceFlags(f, &o.node.Resources)
	addSecurityFlags(f, &o.node.Security)
	addPullFlags(f, &o.node.Pull)
	addRegistryFlags(f, &o.node.Registry)
	addGCFlags(f, &o.node.GC)
	addAPIFlags(f, &o.node.API)
	addControlPlaneFlags(f, &o.node.ControlPlane)
	addKubeletAPIFlags(f, &o.node.KubeletAPI)
	addShutdownFlags(f, &o.node.Shutdown)
	addConfigFlags(f, &o.file)
	return cmd
}

// complete reads the configuration file (--config) into the flags it does
// not override, then sets the defaults that depend on other flags.
func (o *agentFlags) complete(f *pflag.FlagSet) error {
	if err := o.file.load(f); err != nil {
		return err
	}
	// The kubelet API serves a node of an API server (--kubeconfig, or its
	// own with --control-plane); without one it listens only where --port
	// asks for it (see docs/kubelet-api.md).
	c := &o.node
	joins := c.API.Kubeconfig != "" || c.ControlPlane.Enabled
	resolveKubeletAPI(&c.KubeletAPI, f, joins, c.ControlPlane.Enabled)
	return nil
}

func addAgentFlags(f *pflag.FlagSet, o *node.Config) {
	f.StringVar(&o.PodManifestPath, "pod-manifest-path", "", "directory of static pod manifests to run")
	f.StringVar(&o.RuntimeEndpoint, "container-runtime-endpoint", "", "CRI endpoint (unix:///path); empty starts a managed containerd")
	f.StringVar(&o.RootDir, "root-dir", defaultRootDir, "directory for skiff's state, the managed containerd and image archives")
	f.StringVar(&o.HostnameOverride, "hostname-override", "", "node name to use instead of the hostname")
	f.StringVar(&o.PodLogsDir, "pod-logs-dir", podlogs.DefaultRoot, "directory for container logs")
	f.IntVar(&o.ReadOnlyPort, "read-only-port", 0, "TCP port for the read-only local API (0 disables)")
	f.StringVar(&o.Address, "address", "127.0.0.1", "IP address for --read-only-port")
	f.IntVar(&o.Verbosity, "v", 0, "log verbosity (4 and above: debug)")
	f.StringVar(&o.PodCIDR, "pod-cidr", "10.88.0.0/16", "pod IP range of the managed CNI bridge")
	f.StringVar(&o.CNIBinDir, "cni-bin-dir", "/usr/lib/cni", "CNI plugin binaries for the managed containerd")
	f.StringVar(&o.PauseBinary, "pause-binary", "", "static executable the managed containerd's pause image is built from (default: skiff's built-in pause on amd64 and arm64, else skiff-pause beside this executable, else this executable if static)")
	f.StringVar(&o.ResolvConf, "resolv-conf", "/etc/resolv.conf", "resolver configuration pods inherit")
	f.StringVar(&o.ClusterDomain, "cluster-domain", agent.DefaultClusterDomain, "DNS domain of the cluster: the FQDN of a pod with spec.subdomain is <hostname>.<subdomain>.<namespace>.svc.<cluster-domain>")
	f.StringSliceVar(&o.ClusterDNS, "cluster-dns", nil, "comma-separated IP addresses of the cluster DNS servers: pods of dnsPolicy ClusterFirst (off the host network) and ClusterFirstWithHostNet get only these, with the cluster's search domains and ndots:5 (none: they get --resolv-conf, with a MissingClusterDNS warning event)")
	f.DurationVar(&o.RuntimeTimeout, "runtime-request-timeout", 2*time.Minute, "timeout of CRI requests")
	f.IntVar(&o.PodsPerShim, "pods-per-shim", 0, fmt.Sprintf("pods whose containers share one runc shim process, filled in creation order (0: %d with the managed containerd, 1 = one shim per pod with --container-runtime-endpoint, whose containerd must list io.containerd.runc.v2.group in the runc runtime's pod_annotations to group)", node.DefaultPodsPerShim))
	f.IntVar(&o.MaxParallelStarts, "max-parallel-starts", 0, "upper bound of sandboxes/containers started (and sandboxes torn down) at once; the number adapts to the runtime's throughput from max(2, CPUs) up to it (0: 4*CPUs within [16, 64]; N <= max(2, CPUs): fixed N)")
	f.DurationVar(&o.MaxContainerRestartPeriod, "max-container-restart-period", 300*time.Second, "the longest restart back-off of a crashing container, 1s to 300s (crashLoopBackOff.maxContainerRestartPeriod; the back-off starts at 10s, or at this if shorter)")
	f.IntVar(&o.MaxParallelProbes, "max-parallel-exec-probes", 0, "exec probes running at once (0: max(2, CPUs); -1: no bound)")
}

func addResourceFlags(f *pflag.FlagSet, r *node.ResourcesConfig) {
	f.StringVar(&r.CgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver: cgroupfs or systemd (the runtime must use the same)")
	f.StringVar(&r.CgroupRoot, "cgroup-root", "/", "cgroup under which kubepods is created")
	f.BoolVar(&r.CgroupsPerQOS, "cgroups-per-qos", true, "create QoS and pod-level cgroups")
	f.StringVar(&r.SystemReserved, "system-reserved", "", "resources reserved for the system, e.g. cpu=100m,memory=256Mi")
	f.StringVar(&r.KubeReserved, "kube-reserved", "", "resources reserved for skiff and the runtime, e.g. cpu=100m,memory=256Mi")
	f.StringVar(&r.EvictionHard, "eviction-hard", "memory.available<100Mi", "hard eviction threshold subtracted from allocatable (memory.available only)")
	f.Int64Var(&r.MaxPods, "max-pods", agent.DefaultMaxPods, "number of pods this node admits")
	f.Int64Var(&r.PodMaxPids, "pod-max-pids", -1, "pids.max of each pod cgroup (-1: unlimited)")
	f.DurationVar(&r.CPUCFSQuotaPeriod, "cpu-cfs-quota-period", 100*time.Millisecond, "the CFS period of cpu limits, of containers and pod cgroups, 1ms to 1s (cpuCFSQuotaPeriod)")
	f.Float64Var(&r.MemoryThrottlingFactor, "memory-throttling-factor", 0, "MemoryQoS on cgroup v2: a container whose memory request is below its limit gets memory.high at request + factor * (limit, or the node's memory less --system-reserved and --kube-reserved, - request); greater than 0 and at most 1 (memoryThrottlingFactor; 0: none, the kubelet's default since 1.37)")
	f.BoolVar(&r.SingleProcessOOMKill, "single-process-oom-kill", false, "on cgroup v2, an OOM kill takes one process of a container instead of all of it (memory.oom.group); cgroup v1 always kills one")
	f.BoolVar(&r.FailCgroupV1, "fail-cgroupv1", false, "refuse to start on a host using cgroup v1 (the kubelet's default since 1.35; skiff runs on both)")
}

func newLogger(verbosity int) *slog.Logger {
	level := slog.LevelInfo
	if verbosity >= 4 {
		level = slog.LevelDebug
	}
	return slog.New(logHandler(&slog.HandlerOptions{Level: level}))
}

// logHandler is the agent's slog handler on stderr: journald's stream
// format (no time, "<N>" priority prefixes) when stderr is the journal,
// else slog's text format.
func logHandler(opts *slog.HandlerOptions) slog.Handler {
	if systemd.StderrIsJournal() {
		return systemd.JournalHandler(os.Stderr, opts)
	}
	return slog.NewTextHandler(os.Stderr, opts)
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

// resolveKubeletAPI applies the defaults that depend on how the agent runs, to the
// flags that neither the command line nor --config set: joins says whether
// the agent joins an API server (--kubeconfig or --control-plane), local
// whether that API server runs on this machine (--control-plane). Without
// one, --port is served only when asked for.
func resolveKubeletAPI(o *node.KubeletAPIConfig, f *pflag.FlagSet, joins, local bool) {
	if !joins && !f.Changed("port") {
		o.Port = 0
	}
	if !f.Changed("authentication-token-webhook") {
		o.TokenWebhook = joins
	}
	if !f.Changed("authorization-mode") {
		o.AuthorizationMode = node.AuthzAlwaysAllow
		if joins {
			o.AuthorizationMode = node.AuthzWebhook
		}
	}
	if !f.Changed("bind-address") && local {
		o.BindAddress = "127.0.0.1"
	}
}
