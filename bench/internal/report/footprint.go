package report

import (
	"fmt"
	"strings"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// Footprint is the node's whole footprint on one runtime (issue 31): skiff,
// its containerd and that containerd's shims, sampled together from /proc.
type Footprint struct {
	// Idle: skiff and the runtime before the first scenario, no pods.
	Idle *NodeFootprint `json:"idle,omitempty"`
	// Loaded: the density scenario's steady window (skiff's pods running).
	Loaded *NodeFootprint `json:"loaded,omitempty"`
	// Errors: why a window is missing (its sampling failed).
	Errors []string `json:"errors,omitempty"`
}

// NodeFootprint is one window of a Footprint with the pods that ran.
type NodeFootprint struct {
	Pods int `json:"pods"`
	procfs.NodeWindow
}

// Version is the runtime's name and version: RuntimeVersion, else (results
// from before that field) the part of Containerd before " (CRI)", else the
// runtime's name.
func (r Run) Version() string {
	if r.RuntimeVersion != "" {
		return r.RuntimeVersion
	}
	if v, _, ok := strings.Cut(r.Containerd, " (CRI)"); ok && v != "" {
		return v
	}
	return r.Runtime
}

// writeFootprint writes the node footprint table: per runtime a row at
// idle and one loaded, each process group's RSS (max over the window) and
// CPU. Nothing when no run measured it.
func writeFootprint(b *strings.Builder, runs []Run) {
	var rows, errs []string
	for _, r := range runs {
		if r.Footprint == nil {
			continue
		}
		for _, e := range r.Footprint.Errors {
			errs = append(errs, fmt.Sprintf("- %s (%s): footprint unavailable: %s\n", r.Version(), r.Runtime, e))
		}
		for _, w := range []struct {
			state string
			f     *NodeFootprint
		}{{"idle", r.Footprint.Idle}, {"loaded", r.Footprint.Loaded}} {
			if w.f != nil {
				rows = append(rows, footprintRow(r, w.state, w.f))
			}
		}
	}
	if len(rows) == 0 && len(errs) == 0 {
		return
	}
	b.WriteString("## Node footprint (issue 31)\n\n")
	b.WriteString("The agent, its containerd and every containerd-shim started with that containerd's socket (`-address`), ")
	b.WriteString("sampled together from `/proc` once a second: idle before the first scenario, loaded in the density scenario's steady window. ")
	b.WriteString("Memory is the maximum over the window of the sum over the processes, in MB (10^6 bytes): PSS (`Pss` of `/proc/<pid>/smaps_rollup`: ")
	b.WriteString("a page shared by n processes counts 1/n to each, so the shims' common executable counts once), then RSS, where a shim's shared pages ")
	b.WriteString("count once per shim (an upper bound). CPU is % of one core; \"runc + execs\" is the CPU of the containerd's and the shims' children ")
	b.WriteString("reaped in the window (runc calls, exec'd probe commands, CNI plugins), included in the total.\n\n")
	b.WriteString("| runtime | state | pods | window | agent PSS (RSS) / CPU | containerd PSS (RSS) / CPU | shims (n) PSS (RSS) / CPU | runc + execs CPU | total PSS (RSS) / CPU |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row)
	}
	b.WriteString("\n")
	for _, e := range errs {
		b.WriteString(e)
	}
	if len(errs) > 0 {
		b.WriteString("\n")
	}
}

// footprintRow is one row of the footprint table.
func footprintRow(r Run, state string, f *NodeFootprint) string {
	cell := func(w procfs.Window) string {
		if w.PSSMaxMB == 0 { // results from before PSS was read
			return fmt.Sprintf("(%.1f MB) / %.2f %%", w.RSSMaxMB, w.CPUPercent)
		}
		return fmt.Sprintf("%.1f (%.1f) MB / %.2f %%", w.PSSMaxMB, w.RSSMaxMB, w.CPUPercent)
	}
	return fmt.Sprintf("| %s (%s) | %s | %d | %.0f s | %s | %s | (%d) %s | %.2f %% | %s |\n", r.Version(), r.Runtime, state, f.Pods, f.Seconds,
		cell(f.Agent), cell(f.Containerd), f.ShimCount, cell(f.Shims), f.ChildrenCPUPercent, cell(f.Total))
}
