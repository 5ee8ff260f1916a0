package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/containerd"
	"github.com/skiffnode/skiff/runtime/cri"
)

// runtimeDeps is what connectRuntime connected to; cleanup closes it all.
type runtimeDeps struct {
	rt       runtime.Runtime
	importer runtime.ImageImporter // nil with an external runtime
	exits    runtime.ExitWatcher   // nil where the runtime has none
	// sandboxImage is the managed containerd's pause image ("" with an
	// external runtime).
	sandboxImage string
	cleanup      func()
}

// DefaultPodsPerShim is how many pods share one runc shim on the managed
// containerd (decision 108): the per-pod shims were two thirds of a node's
// memory; a group bounds what one shim's failure takes down.
const DefaultPodsPerShim = 16

// podsPerShim is --pods-per-shim with its default filled in: an external
// runtime groups only when asked, as its operator must also list the
// annotation in the runtime's pod_annotations.
func podsPerShim(o *Config) int {
	switch {
	case o.PodsPerShim > 0:
		return o.PodsPerShim
	case o.RuntimeEndpoint == "":
		return DefaultPodsPerShim
	default:
		return 1
	}
}

// connectRuntime connects to the CRI runtime: the endpoint given, or a managed
// containerd (with skiff's pause image and the CNI bridge config). Archives in
// <root-dir>/images are imported before any pod starts. On error everything
// acquired is released again.
func connectRuntime(ctx context.Context, o *Config, log *slog.Logger) (_ *runtimeDeps, retErr error) {
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
	endpoint, what := o.RuntimeEndpoint, "--container-runtime-endpoint "+o.RuntimeEndpoint
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
	rt, err := cri.New(ctx, endpoint, o.RuntimeTimeout, cri.WithShimGroups(podsPerShim(o)))
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

func startManaged(ctx context.Context, o *Config, log *slog.Logger) (m *containerd.Managed, imp *containerd.Importer, pauseImage string, retErr error) {
	pauseSrc, err := pauseExecutable(o.PauseBinary, goruntime.GOARCH, log)
	if err != nil {
		return nil, nil, "", err
	}
	pauseRef, err := pauseSrc.ref()
	if err != nil {
		return nil, nil, "", err
	}
	cniDir := filepath.Join(o.RootDir, "cni", "net.d")
	ipamDir, err := network.StateDirs(filepath.Join(o.RootDir, "cni"), network.DefaultNetworkName, log)
	if err != nil {
		return nil, nil, "", fmt.Errorf("CNI state: %w", err)
	}
	if _, err := network.WriteBridgeConflist(cniDir, network.BridgeConfig{PodCIDR: o.PodCIDR, IPAMDataDir: ipamDir}); err != nil {
		return nil, nil, "", fmt.Errorf("CNI config: %w", err)
	}
	regHosts, regAuths := o.Registry.containerdRegistry()
	bin, err := findManagedRuntime(ctx, log)
	if err != nil {
		return nil, nil, "", err
	}
	started, err := containerd.Start(ctx, containerd.Config{
		Binary: bin.containerd, BinDir: bin.dir, Version: bin.version,
		RootDir: o.RootDir, CNIBinDir: o.CNIBinDir, CNIConfDir: cniDir, SandboxImage: pauseRef, Logger: log,
		SystemdCgroup: o.Resources.CgroupDriver == string(cgroups.DriverSystemd),
		RegistryHosts: regHosts, RegistryAuths: regAuths, Ready: cri.Ping,
		ShimGroups: podsPerShim(o) > 1,
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
	if _, err := pauseSrc.ensure(ctx, imp, filepath.Join(o.RootDir, "cache")); err != nil {
		_ = imp.Close()
		return nil, nil, "", fmt.Errorf("pause image: %w", err)
	}
	dir := filepath.Join(o.RootDir, "images")
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

// managedRuntime is the containerd skiff manages and its version.
type managedRuntime struct {
	containerd, version string
	// dir holds skiff's own runtime (its runc shim and runc); "" when
	// containerd is the one on PATH.
	dir string
}

// findManagedRuntime picks the runtime to manage: skiff's own (make
// runtime) beside its executable or in ../lib/skiff from it (make
// install), else containerd from PATH. It logs which one, with the
// versions of containerd and runc.
func findManagedRuntime(ctx context.Context, log *slog.Logger) (managedRuntime, error) {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			d := filepath.Dir(exe)
			dirs = append(dirs, d, filepath.Join(d, "..", "lib", "skiff"))
		}
	}
	r := managedRuntime{containerd: containerd.DefaultBinary, dir: containerd.FindBundled(dirs...)}
	runc, from := "runc", "PATH"
	if r.dir != "" {
		r.dir = filepath.Clean(r.dir)
		r.containerd, runc, from = filepath.Join(r.dir, "containerd"), filepath.Join(r.dir, "runc"), "skiff's own ("+r.dir+")"
	} else if p, err := exec.LookPath(r.containerd); err == nil {
		r.containerd = p
	} else {
		return r, fmt.Errorf("managed runtime: no containerd beside skiff (%s) nor on PATH: run make runtime, or install containerd, or pass --container-runtime-endpoint", strings.Join(dirs, ", "))
	}
	v, err := containerd.BinaryVersion(ctx, r.containerd)
	if err != nil {
		return r, fmt.Errorf("managed runtime: %w", err)
	}
	r.version = v
	rv, err := containerd.RuncVersion(ctx, runc)
	if err != nil {
		rv = "unknown (" + err.Error() + ")"
	}
	log.Info("managed runtime", "from", from, "containerd", r.containerd, "containerdVersion", v, "runc", runc, "runcVersion", rv)
	return r, nil
}

func stopManaged(m *containerd.Managed, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		log.Warn("stopping managed containerd", "err", err)
	}
}

// runtimePhase is the runtime as the rest of the node uses it.
type runtimePhase struct {
	deps *runtimeDeps
	mx   *agentMetrics
	// rt calls the runtime through the metrics' decorator (runtime
	// operations); only the cgroup driver check calls deps.rt directly.
	rt     runtime.Runtime
	puller *images.Puller
	// cgroups is nil where skiff does not manage pod cgroups.
	cgroups *cgroups.Manager
}

// startRuntime connects to the runtime (starting the managed containerd),
// then builds what calls it: the metrics' decorator, the image puller and
// the pod cgroups.
func (n *Node) startRuntime(ctx context.Context) error {
	deps, err := connectRuntime(ctx, &n.cfg, n.log)
	if err != nil {
		return err
	}
	n.onClose(deps.cleanup)
	mx, err := newAgentMetrics(n.name)
	if err != nil {
		return err
	}
	rt := mx.kubelet.InstrumentRuntime(deps.rt)
	// The puller's pulls end when their callers (the pod workers) return;
	// it is waited for before the runtime closes.
	puller, err := n.cfg.Pull.puller(rt)
	if err != nil {
		return err
	}
	n.onClose(puller.Wait)
	cgm, err := setupCgroups(ctx, &n.cfg.Resources, n.kubepods, deps.rt, n.log)
	if err != nil {
		return err
	}
	n.rt = &runtimePhase{deps: deps, mx: mx, rt: rt, puller: puller, cgroups: cgm}
	return nil
}
