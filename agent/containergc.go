package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// containerGC is the container GC, a safety net beside the pod workers: a
// worker prunes its pod's old instances when it starts a new one
// (pruneOld) and removes everything of a deleted pod (terminate), so at
// steady state the GC finds nothing. It catches what they missed: a failed
// removal, objects left by an agent that stopped mid-teardown, containers
// whose sandbox is gone. Each pass lists skiff's sandboxes and containers
// once (two CRI calls a minute), plans with planContainerGC and removes;
// it never touches a running container, nor anything but old exited
// instances of a pod that has a worker.
type containerGC struct {
	rt     runtime.Runtime
	clock  clock.WithTicker
	log    *slog.Logger
	events EventRecorder
	policy ContainerGCPolicy
	// period is Config.ContainerGCPeriod, podLogsDir Config.PodLogsDir.
	period     time.Duration
	podLogsDir string
	pods       gcPods
}

// gcPods is the container GC's port to the agent: which pods have a
// worker. Both methods are safe for concurrent use and return quickly.
type gcPods interface {
	// liveUIDs returns the UIDs of the pods that have a worker, and
	// whether every source has delivered its pods.
	liveUIDs() (map[types.UID]bool, bool)
	// hasWorker reports whether pod uid has a worker now.
	hasWorker(uid types.UID) bool
}

// run runs a container GC pass every period until ctx is done. A pass
// that cannot list the runtime records a ContainerGCFailed event on the
// node, as the kubelet does.
func (g *containerGC) run(ctx context.Context) {
	t := g.clock.NewTicker(g.period)
	defer t.Stop()
	known := map[types.UID]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		var err error
		known, err = g.collect(ctx, known)
		if err != nil && ctx.Err() == nil {
			g.log.Error("container garbage collection failed", "err", err)
			g.events.NodeEvent(v1.EventTypeWarning, EventContainerGCFailed, err.Error())
		}
	}
}

// collect runs one container GC pass: list, plan, remove. known are the
// log directories of pods seen by earlier passes; it returns those of this
// pass. Removal failures are logged, not returned (the next pass retries
// them). Blocking.
func (g *containerGC) collect(ctx context.Context, known map[types.UID]string) (map[types.UID]string, error) {
	sbs, err := g.rt.ListSandboxes(ctx, managedSelector())
	if err != nil {
		return known, fmt.Errorf("list sandboxes: %w", err)
	}
	cs, err := g.rt.ListContainers(ctx, runtime.ContainerFilter{Labels: managedSelector()})
	if err != nil {
		return known, fmt.Errorf("list containers: %w", err)
	}
	// After the listing: a pod whose worker started later has nothing in
	// it.
	live, ready := g.pods.liveUIDs()
	plan := planContainerGC(gcInput{
		Sandboxes: sbs, Containers: cs, Live: live, SourcesReady: ready,
		Known: known, PodLogsDir: g.podLogsDir,
	}, g.policy, g.clock.Now())
	g.apply(ctx, plan, live)
	return plan.Remember, nil
}

// apply removes what plan says, in order. Before removing anything of a
// pod the plan took for deleted, it checks again that the pod has no
// worker (a source may have brought it back meanwhile).
func (g *containerGC) apply(ctx context.Context, plan gcPlan, live map[types.UID]bool) {
	gone := func(uid types.UID) bool {
		if live[uid] {
			return true // only old instances of a live pod are planned
		}
		return !g.pods.hasWorker(uid)
	}
	for _, c := range plan.Containers {
		if !gone(c.UID) {
			continue
		}
		g.log.Info("garbage collecting container", "id", c.ID, "uid", c.UID)
		if err := g.rt.RemoveContainer(ctx, c.ID); err != nil {
			g.log.Warn("removing container", "id", c.ID, "err", err)
			continue
		}
		if err := podlogs.RemoveContainerLogs(c.LogPath); err != nil {
			g.log.Warn("removing container logs", "path", c.LogPath, "err", err)
		}
	}
	for _, sb := range plan.Sandboxes {
		if !gone(sb.UID) {
			continue
		}
		g.log.Info("garbage collecting sandbox", "id", sb.ID, "uid", sb.UID)
		// Stopped already, normally; stopping again is cheap and tears
		// down a network a failed teardown left.
		if err := g.rt.StopSandbox(ctx, sb.ID); err != nil {
			g.log.Warn("stopping sandbox before removal", "id", sb.ID, "err", err)
			continue
		}
		if err := g.rt.RemoveSandbox(ctx, sb.ID); err != nil {
			g.log.Warn("removing sandbox", "id", sb.ID, "err", err)
		}
	}
	for _, d := range plan.LogDirs {
		if live[d.UID] || !gone(d.UID) {
			continue
		}
		if err := os.RemoveAll(d.Dir); err != nil {
			g.log.Warn("removing pod log directory", "dir", d.Dir, "err", err)
		}
	}
}
