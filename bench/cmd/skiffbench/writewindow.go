package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/bench/internal/filesnap"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// writeTargets are what a writes window reads besides the runtime's
// processes: the agent and its root directory (less skip) and the
// runtime's directories, whose files are listed.
type writeTargets struct {
	agent       *agent
	root        string
	skip        []string
	runtimeDirs []string
}

// windowStart is what a window read at its start.
type windowStart struct {
	at                time.Time
	agent, containerd procfs.IO
	device            uint64
	files, runtime    filesnap.Snapshot
	log               int64
}

// writeWindow syncs the filesystems, reads the counters and the agent's
// files, runs phase (which returns the pods it replaced), sampling the
// shims once a second meanwhile (procfs.IOTracker: shims come and go with
// the churn), then reads everything again after another sync. The agent
// and its containerd must live through the window.
func (b *bench) writeWindow(ctx context.Context, t writeTargets, phase func(context.Context) (int, error)) (*report.WriteWindow, error) {
	rt, err := b.runtimeProcs()
	if err != nil {
		return nil, err
	}
	s, err := b.readWindowStart(t, rt)
	if err != nil {
		return nil, err
	}
	var shims procfs.IOTracker
	if err := sampleShims(&shims, rt.Socket); err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var serr error
	wg.Go(func() { serr = sampleShimsEvery(sctx, &shims, rt.Socket) })
	churned, perr := phase(ctx)
	stop()
	wg.Wait()
	if err := errors.Join(perr, serr); err != nil {
		return nil, err
	}
	w := &report.WriteWindow{Churned: churned}
	if err := sampleShims(&shims, rt.Socket); err != nil {
		return nil, err
	}
	w.Shims, w.ShimCount = shims.Total()
	if w.Agent, err = ioSince(t.agent.pid(), s.agent); err != nil {
		return nil, fmt.Errorf("%s: %w", t.agent.name, err)
	}
	if w.Containerd, err = ioSince(rt.ContainerdPid, s.containerd); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	w.Seconds = time.Since(s.at).Seconds()
	unix.Sync()
	if w.DeviceBytes, err = b.deviceSince(s.device); err != nil {
		return nil, err
	}
	return w, b.windowFiles(t, s, w)
}

// readWindowStart syncs the filesystems (what was dirtied before the
// window is written before it) and reads the agent's files, its log's
// size, the device's and the processes' counters.
func (b *bench) readWindowStart(t writeTargets, rt procfs.Runtime) (windowStart, error) {
	var s windowStart
	var err error
	unix.Sync()
	if s.files, err = agentFiles(t); err != nil {
		return s, err
	}
	if s.runtime, err = filesnap.WalkAll(t.runtimeDirs...); err != nil {
		return s, err
	}
	s.log = fileSize(t.agent.proc.log)
	if s.device, err = b.deviceBytes(); err != nil {
		return s, err
	}
	if s.agent, err = procfs.ReadIO("/proc", t.agent.pid()); err != nil {
		return s, fmt.Errorf("%s: %w", t.agent.name, err)
	}
	if s.containerd, err = procfs.ReadIO("/proc", rt.ContainerdPid); err != nil {
		return s, fmt.Errorf("containerd: %w", err)
	}
	s.at = time.Now()
	return s, nil
}

// windowFiles fills w's log growth and files from the start's snapshot.
func (b *bench) windowFiles(t writeTargets, s windowStart, w *report.WriteWindow) error {
	w.LogBytes = fileSize(t.agent.proc.log) - s.log
	files, err := agentFiles(t)
	if err != nil {
		return err
	}
	w.Files, w.FilesChanged, w.FilesRemoved = fileGroups(s.files, files, s.at)
	runtime, err := filesnap.WalkAll(t.runtimeDirs...)
	if err != nil {
		return err
	}
	w.RuntimeFiles, w.RuntimeFilesChanged, w.RuntimeFilesRemoved = fileGroups(s.runtime, runtime, s.at)
	return nil
}

// fileGroups are the largest groups of the files changed between two
// snapshots since at, with the counts of all changed and removed.
func fileGroups(before, after filesnap.Snapshot, at time.Time) ([]filesnap.Group, int, int) {
	changed, removed := filesnap.Diff(before, after, at)
	groups := filesnap.Groups(changed)
	return groups[:min(len(groups), report.MaxFileGroups)], len(changed), removed
}

// agentFiles snapshots the agent's root directory (less t.skip) and its
// log when that lies outside it (the kubelet's), under the log's name.
func agentFiles(t writeTargets) (filesnap.Snapshot, error) {
	snap, err := filesnap.Walk(t.root, t.skip...)
	if err != nil {
		return nil, err
	}
	log := t.agent.proc.log
	if rel, err := filepath.Rel(t.root, log); err != nil || strings.HasPrefix(rel, "..") {
		if info, err := os.Stat(log); err == nil {
			snap[filepath.Base(log)] = filesnap.State{Size: info.Size(), ModTime: info.ModTime()}
		}
	}
	return snap, nil
}

// fileSize is path's size, 0 when it cannot be read.
func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// ioSince reads pid's counters and returns them less start.
func ioSince(pid int, start procfs.IO) (procfs.IO, error) {
	io, err := procfs.ReadIO("/proc", pid)
	if err != nil {
		return procfs.IO{}, err
	}
	return io.Since(start)
}

// sampleShims adds one sample of socket's shims to t.
func sampleShims(t *procfs.IOTracker, socket string) error {
	s, err := procfs.ShimIO("/proc", socket)
	if err != nil {
		return err
	}
	t.Add(s)
	return nil
}

// sampleShimsEvery samples socket's shims into t once a second until ctx
// ends (then it returns nil).
func sampleShimsEvery(ctx context.Context, t *procfs.IOTracker, socket string) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		if err := sampleShims(t, socket); err != nil {
			return err
		}
	}
}

// deviceBytes is the block device's bytes written, 0 without a device
// (the window's figure is then 0: see Writes.DeviceError).
func (b *bench) deviceBytes() (uint64, error) {
	dev, derr := b.device()
	if derr != nil {
		return 0, nil // no device: recorded once in the results, the window goes on
	}
	return dev.BytesWritten()
}

// deviceSince is the device's bytes written since start.
func (b *bench) deviceSince(start uint64) (uint64, error) {
	n, err := b.deviceBytes()
	if err != nil || n < start {
		return 0, err
	}
	return n - start, nil
}
