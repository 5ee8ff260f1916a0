package agent

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// The container GC is a safety net beside the pod workers: a worker prunes
// its pod's old instances when it starts a new one (pruneOld) and removes
// everything of a deleted pod (terminate), so at steady state the GC finds
// nothing. It catches what they missed: a failed removal, objects left by
// an agent that stopped mid-teardown, containers whose sandbox is gone.
// Each pass lists skiff's sandboxes and containers once (two CRI calls a
// minute), plans with planContainerGC and removes; it never touches a
// running container, nor anything but old exited instances of a pod that
// has a worker.

// containerGCLoop runs a container GC pass every ContainerGCPeriod until
// ctx is done. A pass that cannot list the runtime records a
// ContainerGCFailed event on the node, as the kubelet does.
func (a *Agent) containerGCLoop(ctx context.Context) {
	t := a.clock.NewTicker(a.cfg.ContainerGCPeriod)
	defer t.Stop()
	known := map[types.UID]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		var err error
		known, err = a.collectContainers(ctx, known)
		if err != nil && ctx.Err() == nil {
			a.log.Error("container garbage collection failed", "err", err)
			a.events.NodeEvent(v1.EventTypeWarning, EventContainerGCFailed, err.Error())
		}
	}
}

// collectContainers runs one container GC pass: list, plan, remove.
// known are the log directories of pods seen by earlier passes; it
// returns those of this pass. Removal failures are logged, not returned
// (the next pass retries them). Blocking.
func (a *Agent) collectContainers(ctx context.Context, known map[types.UID]string) (map[types.UID]string, error) {
	rt := a.cfg.Runtime
	sbs, err := rt.ListSandboxes(ctx, managedSelector())
	if err != nil {
		return known, fmt.Errorf("list sandboxes: %w", err)
	}
	cs, err := rt.ListContainers(ctx, runtime.ContainerFilter{Labels: managedSelector()})
	if err != nil {
		return known, fmt.Errorf("list containers: %w", err)
	}
	// After the listing: a pod whose worker started later has nothing in
	// it.
	live, ready := a.liveUIDs()
	plan := planContainerGC(gcInput{
		Sandboxes: sbs, Containers: cs, Live: live, SourcesReady: ready,
		Known: known, PodLogsDir: a.cfg.PodLogsDir,
	}, *a.cfg.ContainerGC, a.clock.Now())
	a.applyContainerGC(ctx, plan, live)
	return plan.Remember, nil
}

// applyContainerGC removes what plan says, in order. Before removing
// anything of a pod the plan took for deleted, it checks again that the
// pod has no worker (a source may have brought it back meanwhile).
func (a *Agent) applyContainerGC(ctx context.Context, plan gcPlan, live map[types.UID]bool) {
	gone := func(uid types.UID) bool {
		if live[uid] {
			return true // only old instances of a live pod are planned
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.workers[uid]
		return !ok
	}
	rt := a.cfg.Runtime
	for _, c := range plan.Containers {
		if !gone(c.UID) {
			continue
		}
		a.log.Info("garbage collecting container", "id", c.ID, "uid", c.UID)
		if err := rt.RemoveContainer(ctx, c.ID); err != nil {
			a.log.Warn("removing container", "id", c.ID, "err", err)
			continue
		}
		if err := podlogs.RemoveContainerLogs(c.LogPath); err != nil {
			a.log.Warn("removing container logs", "path", c.LogPath, "err", err)
		}
	}
	for _, sb := range plan.Sandboxes {
		if !gone(sb.UID) {
			continue
		}
		a.log.Info("garbage collecting sandbox", "id", sb.ID, "uid", sb.UID)
		// Stopped already, normally; stopping again is cheap and tears
		// down a network a failed teardown left.
		if err := rt.StopSandbox(ctx, sb.ID); err != nil {
			a.log.Warn("stopping sandbox before removal", "id", sb.ID, "err", err)
			continue
		}
		if err := rt.RemoveSandbox(ctx, sb.ID); err != nil {
			a.log.Warn("removing sandbox", "id", sb.ID, "err", err)
		}
	}
	for _, d := range plan.LogDirs {
		if live[d.UID] || !gone(d.UID) {
			continue
		}
		if err := os.RemoveAll(d.Dir); err != nil {
			a.log.Warn("removing pod log directory", "dir", d.Dir, "err", err)
		}
	}
}

// liveUIDs returns the UIDs of the pods that have a worker, and whether
// every source has delivered its pods.
func (a *Agent) liveUIDs() (map[types.UID]bool, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	live := make(map[types.UID]bool, len(a.workers))
	for uid := range a.workers {
		live[uid] = true
	}
	return live, a.sourcesReady
}
