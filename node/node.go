// Package node assembles a skiff node from a Config and runs it: the
// container runtime, the control plane (--control-plane), the API source,
// the pods' storage, the agent and the local and kubelet APIs. New builds
// it in that order, one phase each; Run runs every background loop under
// one errgroup; Close releases what New acquired, in reverse order.
//
// Loops have one of two owners: the agent runs those that read or change
// its pods (relist, sources, probe changes, volume refresh and sizeLimit
// eviction, container GC; agent.Agent.Run), the node runs all others, each
// added by the phase that built it (n.loop) and listed by Loops.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/internal/k8sversion"
	"github.com/skiffnode/skiff/internal/nodefeatures"
	"github.com/skiffnode/skiff/internal/systemd"
)

// Node is an assembled node. Run it once, then Close it.
type Node struct {
	cfg      Config
	log      *slog.Logger
	name     string
	notifier *systemd.Notifier

	// closers release what the phases acquired; Close calls them in
	// reverse order, so the runtime closes after everything that calls it.
	closers []func()
	// loops are the node's background loops, in order of start.
	loops []loop

	// allocatable and kubepods are the node's resources for pods.
	allocatable v1.ResourceList
	kubepods    *cgroups.PodResources
	// declared are the node's declared features (the agent's admission
	// and the node status).
	declared *nodefeatures.Set

	// Built by the phases, in order.
	rt   *runtimePhase
	api  *apiPhase
	stor *storagePhase
	ag   *agentPhase
}

// loop is one background loop of the node: run returns when ctx is done
// (nil) or when the loop failed, which stops the node.
type loop struct {
	name string
	run  func(ctx context.Context) error
}

// Run validates cfg, assembles the node and runs it until ctx is done or a
// loop fails; it returns after everything it started stopped. Pods keep
// running.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	n, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer n.Close()
	return n.Run(ctx)
}

// New assembles the node in phases; nothing runs until Run. On error what
// was acquired is released again. cfg must have passed Validate.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Node, retErr error) {
	n := &Node{cfg: cfg, log: log}
	defer func() {
		if retErr != nil {
			n.Close()
		}
	}()
	n.notifier = newNotifier(log) // before any child process starts
	name, err := nodeName(cfg.HostnameOverride)
	if err != nil {
		return nil, err
	}
	n.name = name
	if err := os.MkdirAll(cfg.RootDir, 0o700); err != nil {
		return nil, fmt.Errorf("--root-dir: %w", err)
	}
	if err := n.cfg.Registry.resolve(cfg.RootDir, cfg.RuntimeEndpoint, log); err != nil {
		return nil, err
	}
	if n.allocatable, n.kubepods, err = nodeResources(&n.cfg.Resources); err != nil {
		return nil, err
	}
	if n.declared, err = nodefeatures.New(k8sversion.KubeletVersion, nodefeatures.Implemented()); err != nil {
		return nil, err
	}
	if err := checkCgroupVersion(cgroups.UnifiedMountpoint, cfg.Resources.FailCgroupV1, log); err != nil {
		return nil, err
	}
	phases := []struct {
		name string
		run  func(context.Context) error
	}{
		// The control plane first: it stops after the runtime's clean-up,
		// which the agent's last status updates may need.
		{"control plane", n.startControlPlane},
		{"runtime", n.startRuntime},
		{"API source", n.newAPI},
		{"storage", n.newStorage},
		{"agent", n.newAgent},
		{"serving", n.newServing},
	}
	for _, p := range phases {
		if err := p.run(ctx); err != nil {
			return nil, err
		}
	}
	n.loopNoErr("file page release", n.releaseFilePages)
	return n, nil
}

// Loops names the node's background loops in order of start.
func (n *Node) Loops() []string {
	names := make([]string, len(n.loops))
	for i, l := range n.loops {
		names[i] = l.name
	}
	return names
}

// Run runs the node's loops under one errgroup: the first to fail stops the
// others. It returns after all of them returned; an error only if one
// failed while ctx was not done.
func (n *Node) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range n.loops {
		g.Go(func() error { return l.run(gctx) })
	}
	n.log.Info("skiff agent started", "node", n.name, "manifests", n.cfg.PodManifestPath, "root", n.cfg.RootDir, "hostIPs", n.ag.hostIPs)
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return err
	}
	n.log.Info("skiff agent stopping; pods keep running")
	return nil
}

// Close releases what New acquired, in reverse order. Call it after Run
// returned.
func (n *Node) Close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
	n.closers = nil
}

// onClose adds a release to Close's stack.
func (n *Node) onClose(f func()) { n.closers = append(n.closers, f) }

// loop adds a background loop for Run.
func (n *Node) loop(name string, run func(ctx context.Context) error) {
	n.loops = append(n.loops, loop{name: name, run: run})
}

// loopNoErr adds a background loop that cannot fail.
func (n *Node) loopNoErr(name string, run func(ctx context.Context)) {
	n.loop(name, func(ctx context.Context) error { run(ctx); return nil })
}
