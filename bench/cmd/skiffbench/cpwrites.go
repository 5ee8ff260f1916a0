package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/bench/internal/filesnap"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// The control plane's writes (issue 33): the API pods' and the shim's
// steady windows also read the write counters of the control plane's
// processes and the agent's, the block device's and the agent's files.

// namedPid is a process of a control plane window.
type namedPid struct {
	name string
	pid  int
}

// ioWindow is a control plane window (the API and shim scenarios' steady
// windows): the processes' counters and the device's at its start, and
// the agent's files.
type ioWindow struct {
	procs  []namedPid
	start  []procfs.IO
	device uint64
	agent  writeTargets
	files  filesnap.Snapshot
	at     time.Time
	err    error
}

// agentTargets are agent a's files: the kubelet's --root-dir and log,
// skiff's --root-dir without its manifests (the harness writes them) and
// its managed containerd's directory (containerd's files, listed as the
// runtime's).
func (b *bench) agentTargets(a *agent) writeTargets {
	if a.name == "kubelet" {
		return writeTargets{agent: a, root: a.stateDir, skip: []string{a.dir}}
	}
	return writeTargets{agent: a, root: b.skiffRoot, skip: []string{a.dir, filepath.Join(b.skiffRoot, "containerd")}}
}

// startIOWindow syncs the filesystems and reads procs' counters, the
// device's and agent a's files. A failure is kept and reported by end:
// these windows never fail their scenario.
func (b *bench) startIOWindow(a *agent, procs ...namedPid) *ioWindow {
	w := &ioWindow{procs: procs, agent: b.agentTargets(a)}
	unix.Sync()
	w.device, w.err = b.deviceBytes()
	var ferr error
	if w.files, ferr = agentFiles(w.agent); ferr != nil {
		w.err = errors.Join(w.err, ferr)
	}
	for _, p := range procs {
		io, err := procfs.ReadIO("/proc", p.pid)
		if err != nil {
			w.err = errors.Join(w.err, fmt.Errorf("%s: %w", p.name, err))
		}
		w.start = append(w.start, io)
	}
	w.at = time.Now()
	return w
}

// endIOWindow reads w's counters and files again and returns the
// window's figures, or its error.
func (b *bench) endIOWindow(w *ioWindow) *report.ControlPlaneWrites {
	res := &report.ControlPlaneWrites{Seconds: time.Since(w.at).Seconds()}
	err := w.err
	for i, p := range w.procs {
		if err != nil {
			break
		}
		var io procfs.IO
		if io, err = ioSince(p.pid, w.start[i]); err != nil {
			err = fmt.Errorf("%s: %w", p.name, err)
		}
		res.Procs = append(res.Procs, report.ProcWrites{Name: p.name, IO: io})
	}
	unix.Sync()
	if err == nil {
		res.DeviceBytes, err = b.deviceSince(w.device)
	}
	if err == nil {
		var files filesnap.Snapshot
		if files, err = agentFiles(w.agent); err == nil {
			res.AgentFiles, res.AgentFilesChanged, res.AgentFilesRemoved = fileGroups(w.files, files, w.at)
			res.FilesListed = true
		}
	}
	if err != nil {
		b.log.Warn("control plane writes window unavailable", "err", err)
		return &report.ControlPlaneWrites{Error: err.Error()}
	}
	return res
}

// apiWriteProcs are the API scenario's control plane processes (test/
// cluster's etcd and kube-apiserver, found by their flags under the
// cluster's directory) and agent a, for a window of their writes.
func (b *bench) apiWriteProcs(a *agent) ([]namedPid, error) {
	dir := filepath.Join(b.dir, "cluster")
	procs := []namedPid{}
	for _, p := range []struct{ name, arg string }{
		{"etcd", "--data-dir=" + filepath.Join(dir, "etcd")},
		{"kube-apiserver", "--cert-dir=" + filepath.Join(dir, "apiserver-certs")},
	} {
		pids, err := procfs.PidsWithArg("/proc", p.arg)
		if err != nil {
			return nil, err
		}
		if len(pids) != 1 {
			return nil, fmt.Errorf("%d processes with %s, want 1", len(pids), p.arg)
		}
		procs = append(procs, namedPid{p.name, pids[0]})
	}
	return append(procs, namedPid{a.name, a.pid()}), nil
}

// apiSteadyWindow samples a over the API scenario's steady window, with
// the control plane's and a's writes over it (an error there is recorded
// in the figures, never returned).
func (b *bench) apiSteadyWindow(ctx context.Context, a *agent) (procfs.Window, *report.ControlPlaneWrites, error) {
	procs, err := b.apiWriteProcs(a)
	if err != nil {
		b.log.Warn("API writes window unavailable", "err", err)
		w, serr := sampleSteady(ctx, a.pid(), b.cfg.steady)
		return w, &report.ControlPlaneWrites{Error: err.Error()}, serr
	}
	iow := b.startIOWindow(a, procs...)
	w, err := sampleSteady(ctx, a.pid(), b.cfg.steady)
	return w, b.endIOWindow(iow), err
}
