package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// The storage writes scenario (issue 33: storage wear on edge nodes): the
// density pods run by an agent through its manifest directory, then, after
// a settle, a window with no churn and a window in which one pod is
// replaced every writesChurn (the oldest pod's manifest deleted, a new
// pod's written), with the write counters (/proc/<pid>/io) of the agent,
// its containerd and that containerd's shims and the block device's
// (writewindow.go). skiff first, then the kubelet on the same containerd
// (the external runtime only: its comparison; the managed runtime's is
// skiff with its own containerd).

// measureWrites runs the writes scenario when it is selected; the kubelet
// beside skiff on the external runtime.
func (b *bench) measureWrites(ctx context.Context, run *report.Run) error {
	if !b.cfg.runs("writes") {
		return nil
	}
	b.log.Info("scenario 8: storage writes", "runtime", run.Runtime, "pods", b.cfg.densityPods,
		"window", b.cfg.writesWindow, "churn_every", b.cfg.writesChurn)
	var err error
	if run.Writes, err = b.writes(ctx, run.Runtime == report.RuntimeExternal); err != nil {
		return fmt.Errorf("%s: writes scenario: %w", run.Runtime, err)
	}
	return nil
}

// writes measures skiff's windows and, with kubelet (and -kubelet), the
// kubelet's.
func (b *bench) writes(ctx context.Context, kubelet bool) (*report.Writes, error) {
	res := &report.Writes{Pods: b.cfg.densityPods, SettleS: b.cfg.writesSettle.Seconds(), WindowS: b.cfg.writesWindow.Seconds(),
		ChurnEveryS: b.cfg.writesChurn.Seconds()}
	dev, err := b.device()
	if err != nil {
		res.DeviceError = err.Error()
		b.log.Warn("block device unavailable", "err", err)
	}
	res.Device = dev.Name
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		res.Filesystem = procfs.DescribeFS("/sys", string(mi), b.dir, dev)
	}
	if res.Skiff, err = b.agentWrites(ctx, b.skiff); err != nil {
		return nil, err
	}
	if !kubelet {
		return res, nil
	}
	err = b.withKubelet(ctx, func(k *agent) error {
		res.Kubelet, err = b.agentWrites(ctx, k)
		return err
	})
	return res, err
}

// agentWrites starts the density pods for a, lets them settle, measures
// the steady and the churn window and removes the pods.
func (b *bench) agentWrites(ctx context.Context, a *agent) (*report.AgentWrites, error) {
	pods := &writesPods{a: a, cpuMilli: densityCPUMilli(b.cfg.densityPods, goruntime.NumCPU())}
	if err := pods.start(ctx, b, b.cfg.densityPods); err != nil {
		return nil, err
	}
	b.log.Info("writes: pods running, settling", "agent", a.name, "pods", len(pods.names), "settle", b.cfg.writesSettle)
	if err := sleepCtx(ctx, b.cfg.writesSettle); err != nil {
		return nil, err
	}
	t := b.agentTargets(a)
	t.runtimeDirs = b.runtimeDirs
	res := &report.AgentWrites{}
	var err error
	res.Steady, err = b.writeWindow(ctx, t, func(ctx context.Context) (int, error) { return 0, sleepCtx(ctx, b.cfg.writesWindow) })
	if err != nil {
		return nil, fmt.Errorf("%s steady window: %w", a.name, err)
	}
	b.logWindow(a, "steady", res.Steady)
	res.Churn, err = b.writeWindow(ctx, t, func(ctx context.Context) (int, error) { return pods.churn(ctx, b.cfg.writesWindow, b.cfg.writesChurn) })
	if err != nil {
		return nil, fmt.Errorf("%s churn window: %w", a.name, err)
	}
	b.logWindow(a, "churn", res.Churn)
	if err := b.agentRemove(ctx, a, pods.names); err != nil {
		return nil, err
	}
	return res, nil
}

func (b *bench) logWindow(a *agent, phase string, w *report.WriteWindow) {
	b.log.Info("writes window", "agent", a.name, "phase", phase, "seconds", w.Seconds, "churned", w.Churned,
		"agent_mb_h", report.MBPerHour(w.Agent.WriteBytes, w.Seconds), "containerd_mb_h", report.MBPerHour(w.Containerd.WriteBytes, w.Seconds),
		"shims_mb_h", report.MBPerHour(w.Shims.WriteBytes, w.Seconds), "device_mb_h", report.MBPerHour(w.DeviceBytes, w.Seconds),
		"log_bytes", w.LogBytes, "files_changed", w.FilesChanged)
}

// device is the block device holding the runtime's directory (found once).
func (b *bench) device() (procfs.BlockDev, error) {
	if b.dev == nil {
		d, err := procfs.BlockDevOf("/sys", b.dir)
		b.dev = &deviceResult{d, err}
	}
	return b.dev.dev, b.dev.err
}

// deviceResult is bench.device's answer, kept.
type deviceResult struct {
	dev procfs.BlockDev
	err error
}

// writesPods are the scenario's pods of one agent, oldest first.
type writesPods struct {
	a        *agent
	cpuMilli int64
	names    []string
	next     int // the next pod's number
}

// add writes the manifests of n new pods at once and returns their pod
// names.
func (p *writesPods) add(n int) ([]string, error) {
	manifests := make(map[string][]byte, n)
	pods := make([]string, 0, n)
	for range n {
		name := fmt.Sprintf("%s-w-%d", p.a.prefix, p.next)
		p.next++
		data, err := densityManifest(name, p.cpuMilli)
		if err != nil {
			return nil, err
		}
		manifests[name] = data
		p.names, pods = append(p.names, name), append(pods, podName(name))
	}
	if _, err := writeManifests(p.a.dir, manifests); err != nil {
		return nil, err
	}
	return pods, nil
}

// start writes n pods' manifests and waits until all run.
func (p *writesPods) start(ctx context.Context, b *bench, n int) error {
	pods, err := p.add(n)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	if _, err := b.c.WaitRunning(wctx, pods, criops.InPods(agentNamespace, "app", pods), densityPoll); err != nil {
		return fmt.Errorf("%s writes pods: %w", p.a.name, err)
	}
	return nil
}

// churn replaces the oldest pod by a new one every period for d (the
// first after one period), without waiting for either, and returns how
// many it replaced.
func (p *writesPods) churn(ctx context.Context, d, period time.Duration) (int, error) {
	end := time.Now().Add(d)
	n := 0
	for {
		wait := min(period, time.Until(end))
		if err := sleepCtx(ctx, wait); err != nil {
			return n, err
		}
		if wait < period {
			return n, nil
		}
		old := p.names[0]
		if err := os.Remove(filepath.Join(p.a.dir, old+".yaml")); err != nil {
			return n, fmt.Errorf("churn: remove manifest %s: %w", old, err)
		}
		p.names = p.names[1:]
		if _, err := p.add(1); err != nil {
			return n, fmt.Errorf("churn: %w", err)
		}
		n++
	}
}
