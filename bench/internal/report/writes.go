package report

import (
	"fmt"
	"math"

	"github.com/skiffnode/skiff/bench/internal/filesnap"
	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// Writes is the storage writes scenario (issue 33, storage wear on edge
// nodes): the density pods (exec readiness probes) run by an agent
// through its manifest directory; after a settle, a window with no churn
// (steady) and one in which one pod is deleted and another created every
// ChurnEveryS (churn), each with the write counters of the agent, its
// containerd and that containerd's shims and the block device's, for skiff
// and then for the kubelet on the same containerd.
type Writes struct {
	Pods int `json:"pods"`
	// SettleS: from all pods running to the steady window; WindowS: each
	// window's planned length; ChurnEveryS: the churn window's period.
	SettleS     float64 `json:"settle_s"`
	WindowS     float64 `json:"window_s"`
	ChurnEveryS float64 `json:"churn_every_s"`
	// Device is the block device holding the bench root ("": not found,
	// DeviceError says why).
	Device      string `json:"device,omitempty"`
	DeviceError string `json:"device_error,omitempty"`
	// Filesystem describes the bench root's filesystem ("ext4, no
	// journal"; "": unknown): with no journal, metadata is written back
	// from the page cache and counts in the write_bytes of the process
	// that changed it.
	Filesystem string       `json:"filesystem,omitempty"`
	Skiff      *AgentWrites `json:"skiff,omitempty"`
	Kubelet    *AgentWrites `json:"kubelet,omitempty"`
}

// AgentWrites are one agent's windows.
type AgentWrites struct {
	Steady *WriteWindow `json:"steady,omitempty"`
	Churn  *WriteWindow `json:"churn,omitempty"`
}

// WriteWindow is what one window measured: each process's /proc/<pid>/io
// counters over it (procfs.IO), the block device's bytes written
// (machine-wide: every process's, the filesystem journal's), the growth of
// the agent's log and the files under the agent's root directory written
// in it.
type WriteWindow struct {
	Seconds float64 `json:"seconds"`
	// Churned: pods deleted and as many created in the window.
	Churned    int       `json:"churned,omitempty"`
	Agent      procfs.IO `json:"agent"`
	Containerd procfs.IO `json:"containerd"`
	// Shims: every shim of the runtime's socket seen in the window, summed
	// (ShimCount of them); see procfs.IOTracker.
	Shims     procfs.IO `json:"shims"`
	ShimCount int       `json:"shim_count"`
	// DeviceBytes: sectors written x 512, the filesystems synced at both
	// ends of the window (0 with Writes.Device "").
	DeviceBytes uint64 `json:"device_bytes"`
	// LogBytes: what the agent's log file (its stderr) grew by.
	LogBytes int64 `json:"log_bytes"`
	// Files: the agent's files written in the window, grouped (the
	// largest groups, at most maxFileGroups); FilesChanged and
	// FilesRemoved count all of them.
	Files        []filesnap.Group `json:"files,omitempty"`
	FilesChanged int              `json:"files_changed"`
	FilesRemoved int              `json:"files_removed"`
	// RuntimeFiles, RuntimeFilesChanged, RuntimeFilesRemoved: the same
	// for the runtime's directories (containerd's root and state and its
	// log: what its containerd and shims wrote there).
	RuntimeFiles        []filesnap.Group `json:"runtime_files,omitempty"`
	RuntimeFilesChanged int              `json:"runtime_files_changed"`
	RuntimeFilesRemoved int              `json:"runtime_files_removed"`
}

// MaxFileGroups bounds WriteWindow.Files.
const MaxFileGroups = 25

// ProcWrites is a named process's counters over a window.
type ProcWrites struct {
	Name string `json:"name"`
	procfs.IO
}

// ControlPlaneWrites are the write counters of the control plane's
// processes and the agent over the API or shim scenario's steady window.
type ControlPlaneWrites struct {
	Seconds     float64      `json:"seconds"`
	Procs       []ProcWrites `json:"procs"`
	DeviceBytes uint64       `json:"device_bytes"`
	// AgentFiles, AgentFilesChanged, AgentFilesRemoved: the agent's files
	// written in the window, as WriteWindow's Files, where FilesListed
	// (false: results from before the listing).
	FilesListed       bool             `json:"files_listed,omitempty"`
	AgentFiles        []filesnap.Group `json:"agent_files,omitempty"`
	AgentFilesChanged int              `json:"agent_files_changed"`
	AgentFilesRemoved int              `json:"agent_files_removed"`
	// Error: why the window is missing (it never fails the scenario).
	Error string `json:"error,omitempty"`
}

// APIWrites are the API scenario's windows, one per agent.
type APIWrites struct {
	Skiff   *ControlPlaneWrites `json:"skiff,omitempty"`
	Kubelet *ControlPlaneWrites `json:"kubelet,omitempty"`
}

// MBPerHour is bytes written over seconds as MB (10^6 bytes) per hour;
// NaN without a window.
func MBPerHour(bytes uint64, seconds float64) float64 {
	if seconds <= 0 || math.IsNaN(seconds) {
		return math.NaN()
	}
	return float64(bytes) / 1e6 * 3600 / seconds
}

// AgentMBPerHour is the agent's write_bytes per hour in w; NaN for nil.
func (w *WriteWindow) AgentMBPerHour() float64 {
	if w == nil {
		return math.NaN()
	}
	return MBPerHour(w.Agent.WriteBytes, w.Seconds)
}

// EvaluateWrites checks w against issue 33's goals: skiff's own steady
// writes under l.WritesMBPerHour and at least l.WritesKubeletFactor times
// below the kubelet's in the same run (NotRun without the kubelet). Pure.
func EvaluateWrites(w *Writes, l Limits) []Target {
	var sk, kb *WriteWindow
	if w.Skiff != nil {
		sk = w.Skiff.Steady
	}
	if w.Kubelet != nil {
		kb = w.Kubelet.Steady
	}
	pods := fmt.Sprintf("steady, %d pods", w.Pods)
	own := maxTarget("skiff's own writes, "+pods, l.WritesMBPerHour, sk.AgentMBPerHour(), "MB/h")
	own.Value = mbh(sk.AgentMBPerHour()) + " MB/h"
	return []Target{own, factorTarget("skiff below the kubelet, "+pods, l.WritesKubeletFactor, sk.AgentMBPerHour(), kb.AgentMBPerHour(), kb != nil)}
}

// factorTarget: the kubelet's rate must be at least factor times skiff's.
func factorTarget(name string, factor, skiff, kubelet float64, kubeletRan bool) Target {
	t := Target{Name: name, Goal: fmt.Sprintf(">= %sx below the kubelet", trim(factor))}
	switch {
	case math.IsNaN(skiff):
		t.Value, t.Status = "-", Unknown
	case !kubeletRan:
		t.Value, t.Status = "-", NotRun
	case math.IsNaN(kubelet) || kubelet <= 0:
		t.Value, t.Status = fmt.Sprintf("kubelet %s MB/h", mbh(kubelet)), Unknown
	case skiff <= 0:
		t.Value, t.Status = fmt.Sprintf("skiff wrote nothing, kubelet %s MB/h", mbh(kubelet)), Met
	default:
		f := kubelet / skiff
		t.Value = fmt.Sprintf("%sx (%s vs %s MB/h)", trim(f), mbh(skiff), mbh(kubelet))
		t.Status = status(f >= factor)
	}
	return t
}

// mbh formats MB per hour: three decimals below 1 (the goal's scale),
// else trim's.
func mbh(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	default:
		return trim(v)
	}
}

// size formats bytes in B, KB or MB (10^3, 10^6).
func size(n uint64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	}
}
