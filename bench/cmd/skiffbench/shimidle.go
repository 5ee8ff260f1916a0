package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// The control plane's service proxy (kube-proxy's nftables proxier, IPv4
// only) keeps its rules in this nftables table, which outlives
// skiff-apiserver: teardown deletes it once skiff with --control-plane is
// stopped for the last time (deleteNftTable).
const (
	proxyTableFamily = "ip"
	proxyTableName   = "kube-proxy"
)

// apiServerPid is skiff-apiserver's pid from its pid file under skiff's
// root (<root>/apiserver/skiff-apiserver.pid).
func (b *bench) apiServerPid() (int, error) {
	return readPidFile(filepath.Join(b.skiffRoot, "apiserver", "skiff-apiserver.pid"))
}

// controlPlaneSample is one reading of the whole node with
// --control-plane: the agent and the runtime (containerd, shims, pause) in
// one walk of /proc, and skiff-apiserver.
type controlPlaneSample struct {
	node      procfs.NodeSample
	apiServer procfs.Sample
}

// summarizeControlPlaneNode reduces samples (in time order, at least two)
// to the whole node's window: the agent and the runtime as the node
// footprint summarises them, skiff-apiserver on its own, and the total,
// whose memory is summed per sample and whose CPU is theirs summed. Pure.
func summarizeControlPlaneNode(samples []controlPlaneSample) (*report.ShimIdle, error) {
	nodes := make([]procfs.NodeSample, len(samples))
	apis := make([]procfs.Sample, len(samples))
	totals := make([]procfs.Sample, len(samples))
	for i, s := range samples {
		nodes[i], apis[i] = s.node, s.apiServer
		rss, pss := s.node.Memory()
		totals[i] = procfs.Sample{At: s.node.At, RSSBytes: rss + s.apiServer.RSSBytes, PSSBytes: pss + s.apiServer.PSSBytes}
	}
	node, err := procfs.SummarizeNode(nodes)
	if err != nil {
		return nil, err
	}
	api, err := procfs.Summarize(apis)
	if err != nil {
		return nil, fmt.Errorf("skiff-apiserver: %w", err)
	}
	total, err := procfs.Summarize(totals) // no ticks: the CPU is set below
	if err != nil {
		return nil, fmt.Errorf("total: %w", err)
	}
	total.CPUPercent = node.Total.CPUPercent + api.CPUPercent
	return &report.ShimIdle{Node: node, APIServer: api, Total: total}, nil
}

// sampleControlPlaneNode samples the agent, skiff-apiserver and the
// runtime together once a second for d.
func (b *bench) sampleControlPlaneNode(ctx context.Context, d time.Duration) (*report.ShimIdle, error) {
	rt, err := b.runtimeProcs()
	if err != nil {
		return nil, err
	}
	apiPid, err := b.apiServerPid()
	if err != nil {
		return nil, err
	}
	agentPid := b.skiff.pid()
	samples, err := sampleEvery(ctx, d, func(now time.Time) (controlPlaneSample, error) {
		n, err := procfs.ReadNode("/proc", agentPid, rt, now)
		if err != nil {
			return controlPlaneSample{}, err
		}
		a, err := procfs.ReadWithPSS("/proc", apiPid, now)
		if err != nil {
			return controlPlaneSample{}, fmt.Errorf("skiff-apiserver: %w", err)
		}
		return controlPlaneSample{node: n, apiServer: a}, nil
	})
	if err != nil {
		return nil, err
	}
	return summarizeControlPlaneNode(samples)
}

// shimIdle measures the whole node with --control-plane at rest (issue
// 36) over the idle window into res.Idle. A failure is recorded in
// res.IdleError, never returned: the figure is reported, not asserted.
func (b *bench) shimIdle(ctx context.Context, res *report.Shim) {
	if b.runtimeProcs == nil || b.cfg.idle <= 0 {
		return
	}
	idle, err := b.sampleControlPlaneNode(ctx, b.cfg.idle)
	if err != nil {
		b.log.Warn("control plane node idle unavailable", "err", err)
		res.IdleError = err.Error()
		return
	}
	res.Idle = idle
	b.log.Info("control plane node idle", "total_rss_mb", idle.Total.RSSMaxMB, "total_pss_mb", idle.Total.PSSMaxMB,
		"agent_rss_mb", idle.Node.Agent.RSSMaxMB, "apiserver_rss_mb", idle.APIServer.RSSMaxMB,
		"containerd_rss_mb", idle.Node.Containerd.RSSMaxMB, "shims", idle.Node.ShimCount)
}

// deleteNftTable deletes the nftables table family name and reports
// whether there was one. A table that does not exist, or no nft on the
// machine (the proxy needs it to make one), is nothing to delete.
func deleteNftTable(ctx context.Context, family, name string) (bool, error) {
	out, err := exec.CommandContext(ctx, "nft", "delete", "table", family, name).CombinedOutput()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, exec.ErrNotFound), bytes.Contains(out, []byte("No such file or directory")):
		return false, nil
	default:
		return false, fmt.Errorf("nft delete table %s %s: %w: %s", family, name, err, bytes.TrimSpace(out))
	}
}
