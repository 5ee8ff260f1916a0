package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// runtimeProcs resolves the processes of a runtime's node footprint (issue
// 31): its containerd's pid (read again at every window: the managed one
// may have been restarted by skiff) and the socket its shims were started
// with.
type runtimeProcs func() (procfs.Runtime, error)

// managedProcs is skiff's managed containerd under skiff's root dir: its
// pid file and socket in <root>/containerd (runtime/containerd's layout).
func managedProcs(skiffRoot string) runtimeProcs {
	dir := filepath.Join(skiffRoot, "containerd")
	return func() (procfs.Runtime, error) {
		pid, err := readPidFile(filepath.Join(dir, "containerd.pid"))
		if err != nil {
			return procfs.Runtime{}, fmt.Errorf("managed containerd: %w", err)
		}
		return procfs.Runtime{ContainerdPid: pid, Socket: filepath.Join(dir, "containerd.sock")}, nil
	}
}

// externalProcs is the containerd the harness started.
func externalProcs(e *externalContainerd) runtimeProcs {
	return func() (procfs.Runtime, error) {
		return procfs.Runtime{ContainerdPid: e.proc.cmd.Process.Pid, Socket: e.socket()}, nil
	}
}

// sampleEvery calls read once a second for d (the first at once, the last
// at d) and returns the samples in order; the first error ends it.
func sampleEvery[S any](ctx context.Context, d time.Duration, read func(now time.Time) (S, error)) ([]S, error) {
	var samples []S
	end := time.Now().Add(d)
	for {
		now := time.Now()
		s, err := read(now)
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
		if !now.Before(end) {
			return samples, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(time.Second, time.Until(end))):
		}
	}
}

// sampleNode samples the agent (pid) and rt's containerd and shims
// together, once a second for d: one walk of /proc per sample.
func sampleNode(ctx context.Context, pid int, rt procfs.Runtime, d time.Duration) (procfs.NodeWindow, error) {
	samples, err := sampleEvery(ctx, d, func(now time.Time) (procfs.NodeSample, error) {
		return procfs.ReadNode("/proc", pid, rt, now)
	})
	if err != nil {
		return procfs.NodeWindow{}, err
	}
	return procfs.SummarizeNode(samples)
}

// idleFootprint samples skiff and the runtime over the idle window before
// the first scenario (no pods). A failure is recorded in the footprint,
// never returned: the footprint is reported, not asserted.
func (b *bench) idleFootprint(ctx context.Context, fp *report.Footprint) {
	if b.runtimeProcs == nil || b.cfg.idle <= 0 {
		return
	}
	rt, err := b.runtimeProcs()
	if err == nil {
		var w procfs.NodeWindow
		if w, err = sampleNode(ctx, b.skiff.pid(), rt, b.cfg.idle); err == nil {
			fp.Idle = &report.NodeFootprint{NodeWindow: w}
			b.log.Info("idle footprint", "agent_rss_mb", w.Agent.RSSMaxMB, "containerd_rss_mb", w.Containerd.RSSMaxMB,
				"shims", w.ShimCount, "total_cpu_pct", w.Total.CPUPercent)
			return
		}
	}
	b.log.Warn("idle footprint unavailable", "err", err)
	fp.Errors = append(fp.Errors, "idle: "+err.Error())
}

// loadedFootprint samples agent a with the runtime's containerd, shims and
// pause processes over the steady window d of n pods into *into and
// returns the agent's own window. A runtime it cannot find is recorded in
// fp and the agent is sampled alone; a sample that fails fails the window,
// as the agent's own sampling does.
func (b *bench) loadedFootprint(ctx context.Context, a *agent, n int, d time.Duration, fp *report.Footprint, into **report.NodeFootprint) (procfs.Window, error) {
	if b.runtimeProcs == nil {
		return sampleSteady(ctx, a.pid(), d)
	}
	rt, err := b.runtimeProcs()
	if err != nil {
		b.log.Warn("loaded footprint unavailable", "err", err)
		fp.Errors = append(fp.Errors, "loaded: "+err.Error())
		return sampleSteady(ctx, a.pid(), d)
	}
	w, err := sampleNode(ctx, a.pid(), rt, d)
	if err != nil {
		return procfs.Window{}, err
	}
	*into = &report.NodeFootprint{AgentName: a.name, Pods: n, NodeWindow: w}
	b.log.Info("loaded footprint", "agent", a.name, "pods", n, "pause", w.PauseCount, "pause_pss_mb", w.Pause.PSSMaxMB, "total_pss_mb", w.Total.PSSMaxMB, "containerd_rss_mb", w.Containerd.RSSMaxMB, "containerd_cpu_pct", w.Containerd.CPUPercent,
		"shims", w.ShimCount, "shims_rss_mb", w.Shims.RSSMaxMB, "shims_pss_mb", w.Shims.PSSMaxMB, "children_cpu_pct", w.ChildrenCPUPercent, "total_cpu_pct", w.Total.CPUPercent)
	return w.Agent, nil
}
