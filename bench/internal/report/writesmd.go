package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skiffnode/skiff/bench/internal/filesnap"
	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// hasWrites reports whether run has a figure for the storage writes
// section: the writes scenario, or a control plane window.
func hasWrites(run Run) bool {
	return run.Writes != nil || (run.Shim != nil && run.Shim.Writes != nil) || (run.API != nil && run.API.Writes != nil)
}

// writeWrites writes the storage writes section (issue 33): the goals,
// a table per window with skiff beside the kubelet, the files each agent
// wrote, then the control plane's windows of the API and shim scenarios.
func writeWrites(b *strings.Builder, num string, run Run, l Limits) {
	fmt.Fprintf(b, "### %s Storage writes, %s (issue 33: bytes written per hour)\n\n", num, run.Runtime)
	b.WriteString("Per process, `write_bytes` of `/proc/<pid>/io` over the window: the page cache pages it dirtied (4 KiB each, counted ")
	b.WriteString("once until written back), its own writes and its reaped children's (runc under a shim, mount or du under an agent); ")
	b.WriteString("\"cancelled\" is dirty data dropped before it reached the disk (a file deleted or truncated first). The agent's log is ")
	b.WriteString("its stderr, a file under the bench root that it writes itself, so its growth is inside the agent's figure. ")
	b.WriteString("The block device's figure is sectors written x 512 of the device holding the bench root (`/sys/block/<dev>/stat`), ")
	b.WriteString("with `sync` at both ends of the window: machine-wide, every process's writes and the filesystem's journal, ")
	b.WriteString("including work beside the benchmark. MB is 10^6 bytes.\n\n")
	if w := run.Writes; w != nil {
		writeWritesScenario(b, w, l)
	}
	writeControlPlaneWrites(b, run)
}

// writeWritesScenario writes the writes scenario's goals, windows and
// files.
func writeWritesScenario(b *strings.Builder, w *Writes, l Limits) {
	b.WriteString("| goal | target | value | status |\n|---|---|---|---|\n")
	for _, t := range EvaluateWrites(w, l) {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Name, t.Goal, t.Value, t.Status)
	}
	dev := w.Device
	if dev == "" {
		dev = "not found: " + w.DeviceError
	}
	if w.Filesystem != "" {
		dev += ", " + w.Filesystem
	}
	fmt.Fprintf(b, "\n%d density pods (exec readiness probe every 10 s) started through the manifest directory, %.0f s to settle once all ran, "+
		"then a %.0f s window with no churn and a %.0f s window in which the oldest pod's manifest is deleted and a new pod's written every %.0f s; "+
		"skiff first, then the kubelet on the same containerd. Block device: %s.", w.Pods, w.SettleS, w.WindowS, w.WindowS, w.ChurnEveryS, dev)
	if strings.Contains(w.Filesystem, "no journal") {
		b.WriteString(" Without a journal, the changes to directories, inodes and allocation bitmaps are written back from the page cache ")
		b.WriteString("and count in the `write_bytes` of the process that made them (a mkdir, a file created or removed); with one they are ")
		b.WriteString("the journal thread's and show in the device's figure only.")
	}
	b.WriteString("\n\n")
	for _, ph := range []struct {
		title string
		pick  func(*AgentWrites) *WriteWindow
	}{
		{"Steady, no churn", func(a *AgentWrites) *WriteWindow { return a.Steady }},
		{fmt.Sprintf("Churn, one pod replaced every %.0f s", w.ChurnEveryS), func(a *AgentWrites) *WriteWindow { return a.Churn }},
	} {
		sk, kb := windowOf(w.Skiff, ph.pick), windowOf(w.Kubelet, ph.pick)
		if sk == nil && kb == nil {
			continue
		}
		writeWindowTable(b, ph.title, sk, kb)
	}
	writeFilesTable(b, w)
}

func windowOf(a *AgentWrites, pick func(*AgentWrites) *WriteWindow) *WriteWindow {
	if a == nil {
		return nil
	}
	return pick(a)
}

// writeWindowTable is one phase's table: each process's bytes written,
// cancelled and MB per hour, skiff's window beside the kubelet's.
func writeWindowTable(b *strings.Builder, title string, sk, kb *WriteWindow) {
	fmt.Fprintf(b, "%s (skiff: %s; kubelet: %s):\n\n", title, windowDesc(sk), windowDesc(kb))
	b.WriteString("| process | skiff: written | cancelled | MB/h | kubelet: written | cancelled | MB/h |\n|---|---|---|---|---|---|---|\n")
	rows := []struct {
		name string
		io   func(*WriteWindow) procfs.IO
	}{
		{"the agent (skiff / the kubelet)", func(w *WriteWindow) procfs.IO { return w.Agent }},
		{"its containerd", func(w *WriteWindow) procfs.IO { return w.Containerd }},
		{"containerd's shims, summed", func(w *WriteWindow) procfs.IO { return w.Shims }},
		{"the three together", func(w *WriteWindow) procfs.IO { return w.Agent.Plus(w.Containerd).Plus(w.Shims) }},
		{"block device, machine-wide", func(w *WriteWindow) procfs.IO { return procfs.IO{WriteBytes: w.DeviceBytes} }},
	}
	for i, r := range rows {
		cells := func(w *WriteWindow) string {
			if w == nil {
				return "- | - | -"
			}
			io := r.io(w)
			if i == len(rows)-1 {
				return fmt.Sprintf("%s | - | %s", size(io.WriteBytes), mbh(MBPerHour(io.WriteBytes, w.Seconds)))
			}
			return fmt.Sprintf("%s | %s | %s", size(io.WriteBytes), size(io.CancelledWriteBytes), mbh(MBPerHour(io.WriteBytes, w.Seconds)))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", r.name, cells(sk), cells(kb))
	}
	logCell := func(w *WriteWindow) string {
		if w == nil {
			return "- | - | -"
		}
		return fmt.Sprintf("%s | - | %s", size(uint64(max(w.LogBytes, 0))), mbh(MBPerHour(uint64(max(w.LogBytes, 0)), w.Seconds)))
	}
	fmt.Fprintf(b, "| the agent's log grew (in the agent's figure) | %s | %s |\n\n", logCell(sk), logCell(kb))
}

// windowDesc is a window's length, shims and churn.
func windowDesc(w *WriteWindow) string {
	if w == nil {
		return "not run"
	}
	s := fmt.Sprintf("%.0f s, %d shims", w.Seconds, w.ShimCount)
	if w.Churned > 0 {
		s += fmt.Sprintf(", %d pods replaced", w.Churned)
	}
	return s
}

// writeFilesTable lists the files each agent wrote under its root
// directory in each window, grouped.
func writeFilesTable(b *strings.Builder, w *Writes) {
	type win struct {
		name string
		w    *WriteWindow
	}
	var wins []win
	for _, a := range []struct {
		name string
		a    *AgentWrites
	}{{"skiff", w.Skiff}, {"kubelet", w.Kubelet}} {
		if a.a != nil {
			wins = append(wins, win{a.name + ", steady", a.a.Steady}, win{a.name + ", churn", a.a.Churn})
		}
	}
	b.WriteString("Files written in the window under each agent's root directory (skiff's `--root-dir` without its managed containerd's ")
	b.WriteString("directory, the kubelet's `--root-dir`) and its log, then under its containerd's root and state directories and its log: ")
	b.WriteString("modification time inside the window, grouped by path with pod UIDs and ")
	b.WriteString("container IDs as `*` and numbers as `N`. \"At least\" is one write of each: a new file's (or a new inode renamed into place) whole size, what an appended file gained; ")
	b.WriteString("a file changed in place (same inode, no larger: a database) is counted apart, its written part unknown; ")
	b.WriteString("a file written several times counts once, and one created and removed inside the window (a temporary file) not at all.\n\n")
	b.WriteString("| agent, window | files | path | written at least |\n|---|---|---|---|\n")
	for _, x := range wins {
		if x.w == nil {
			continue
		}
		fileRows(b, x.name, x.w.FilesChanged, x.w.FilesRemoved, x.w.Files)
		fileRows(b, x.name+": containerd", x.w.RuntimeFilesChanged, x.w.RuntimeFilesRemoved, x.w.RuntimeFiles)
	}
	b.WriteString("\n")
}

// fileRows writes the rows of one window's files: the totals, then each
// group.
func fileRows(b *strings.Builder, name string, changed, removed int, groups []filesnap.Group) {
	fmt.Fprintf(b, "| %s | %d written, %d removed | (all) | |\n", name, changed, removed)
	for _, g := range groups {
		files := fmt.Sprint(g.Files)
		if g.New > 0 {
			files += fmt.Sprintf(" (%d new)", g.New)
		}
		written := size(uint64(max(g.Written, 0)))
		if g.InPlace > 0 {
			written = fmt.Sprintf("%s; %d changed in place, %s in all", written, g.InPlace, size(uint64(max(g.InPlaceBytes, 0))))
		}
		fmt.Fprintf(b, "| | %s | `%s` | %s |\n", files, g.Pattern, written)
	}
}

// writeControlPlaneWrites is the API and shim scenarios' windows: the
// control plane's processes beside the agent.
func writeControlPlaneWrites(b *strings.Builder, run Run) {
	type cp struct {
		name string
		w    *ControlPlaneWrites
	}
	var wins []cp
	if a := run.API; a != nil && a.Writes != nil {
		wins = append(wins, cp{"API pods (kube-apiserver + etcd), skiff", a.Writes.Skiff}, cp{"API pods (kube-apiserver + etcd), kubelet", a.Writes.Kubelet})
	}
	if s := run.Shim; s != nil && s.Writes != nil {
		wins = append(wins, cp{fmt.Sprintf("control plane shim (skiff-apiserver, etcd embedded), skiff, %d ConfigMaps", s.ConfigMaps), s.Writes})
	}
	if len(wins) == 0 {
		return
	}
	b.WriteString("The control plane, over the API pods' and the shim's steady windows (their density pods running, no churn):\n\n")
	b.WriteString("| scenario, agent | window | process | written | cancelled | MB/h |\n|---|---|---|---|---|---|\n")
	for _, x := range wins {
		switch {
		case x.w == nil:
			continue
		case x.w.Error != "":
			fmt.Fprintf(b, "| %s | - | unavailable: %s | - | - | - |\n", x.name, x.w.Error)
			continue
		}
		name, window := x.name, fmt.Sprintf("%.0f s", x.w.Seconds)
		for _, p := range x.w.Procs {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name, window, p.Name, size(p.WriteBytes), size(p.CancelledWriteBytes), mbh(MBPerHour(p.WriteBytes, x.w.Seconds)))
			name, window = "", "" // once per window
		}
		fmt.Fprintf(b, "| %s | %s | block device, machine-wide | %s | - | %s |\n", name, window, size(x.w.DeviceBytes), mbh(MBPerHour(x.w.DeviceBytes, x.w.Seconds)))
	}
	b.WriteString("\n")
	listed := slices.DeleteFunc(wins, func(x cp) bool { return x.w == nil || !x.w.FilesListed })
	if len(listed) == 0 {
		return
	}
	b.WriteString("The agent's files written in those windows (as above):\n\n| scenario, agent | files | path | written at least |\n|---|---|---|---|\n")
	for _, x := range listed {
		fileRows(b, x.name, x.w.AgentFilesChanged, x.w.AgentFilesRemoved, x.w.AgentFiles)
	}
	b.WriteString("\n")
}
