// Package report holds the benchmark results (the raw JSON), evaluates the
// issue's targets against them and renders the markdown report and the SVG
// plots. Everything here is pure except the Write* functions.
package report

import (
	"math"
	"time"

	"github.com/skiffnode/skiff/bench/internal/cpuprof"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/stats"
)

// Results is everything one harness run measured; it is written as JSON
// beside the markdown report.
type Results struct {
	Mode      string    `json:"mode"` // "quick" or "full"
	Date      time.Time `json:"date"`
	DurationS float64   `json:"duration_s"`
	Machine   Machine   `json:"machine"`
	Versions  Versions  `json:"versions"`
	// Runs are the scenarios measured on each container runtime, in the
	// order they ran (managed first).
	Runs  []Run    `json:"runs,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// Runtime names (Run.Runtime).
const (
	// RuntimeManaged is skiff's managed containerd (skiff starts it).
	RuntimeManaged = "managed"
	// RuntimeExternal is a containerd the harness starts with a plain CRI
	// config, as a kubelet user has it; skiff and the kubelet dial it.
	RuntimeExternal = "external"
)

// Run is what one container runtime measured: skiff, the CRI floor and,
// optionally, the kubelet, all on that runtime's containerd.
type Run struct {
	Runtime string `json:"runtime"` // RuntimeManaged or RuntimeExternal
	// Containerd describes the runtime: version and a summary of its
	// configuration (CNI network, pause image, runc options).
	Containerd string `json:"containerd"`
	// RuntimeVersion is the CRI Version's runtime name and version
	// ("containerd v2.4.2"); "": results from before the field (see
	// Run.Version).
	RuntimeVersion string `json:"runtime_version,omitempty"`
	// Footprint: the node's processes at idle and with the density pods
	// (issue 31); nil: not measured.
	Footprint *Footprint `json:"footprint,omitempty"`
	Startup   *Startup   `json:"startup,omitempty"`
	Density   *Density   `json:"density,omitempty"`
	Reaction  *Reaction  `json:"reaction,omitempty"`
	Scale     []Scale    `json:"scale,omitempty"`
	Burst     *Burst     `json:"burst,omitempty"`
	Pull      *Pull      `json:"pull,omitempty"`
	// API: pods through a real kube-apiserver (issue 16); nil: not run.
	API *API `json:"api,omitempty"`
	// Shim: skiff's own control plane (issues 17, 36); nil: not run.
	Shim *Shim `json:"shim,omitempty"`
	// Writes: bytes written per hour (issue 33); nil: not run.
	Writes *Writes `json:"writes,omitempty"`
}

// Machine describes the host.
type Machine struct {
	CPUModel   string  `json:"cpu_model"`
	Cores      int     `json:"cores"`
	Kernel     string  `json:"kernel"`
	CgroupMode string  `json:"cgroup_mode"`
	MemoryGB   float64 `json:"memory_gb"`
}

// Versions of the software under test; empty when not run. Containerd
// and Runc are the binaries on PATH (the external runtime's);
// ManagedContainerd and ManagedRunc skiff's own beside its executable (the
// managed runtime's; empty where it has none and uses PATH's). Each Run
// says how its containerd was configured.
type Versions struct {
	Skiff             string `json:"skiff"`
	Containerd        string `json:"containerd"`
	Runc              string `json:"runc"`
	ManagedContainerd string `json:"managed_containerd,omitempty"`
	ManagedRunc       string `json:"managed_runc,omitempty"`
	Kubelet           string `json:"kubelet,omitempty"`
}

// Series is a sample of durations (seconds) with its summary.
type Series struct {
	Samples []float64     `json:"samples_s"`
	Summary stats.Summary `json:"summary"`
}

// NewSeries summarises samples (seconds); no samples give nil (JSON has
// no NaN).
func NewSeries(samples []float64) *Series {
	if len(samples) == 0 {
		return nil
	}
	return &Series{Samples: samples, Summary: stats.Summarize(samples)}
}

// Compare is one figure measured for skiff, the raw CRI floor and,
// optionally, the kubelet.
type Compare struct {
	Skiff   *Series `json:"skiff,omitempty"`
	Floor   *Series `json:"floor,omitempty"`
	Kubelet *Series `json:"kubelet,omitempty"`
}

// Startup is scenario 1: pods with one init and one app container, one
// after another, manifest (or first CRI call) -> app container running.
type Startup struct {
	Pods int `json:"pods"`
	Compare
	// Volumes is the same measurement of the same number of pods whose app
	// also mounts an emptyDir, a configMap and a downwardAPI volume (the
	// floor writes the same files itself and passes CRI mounts); skiff and
	// the floor only (static pods may not reference ConfigMaps in the
	// kubelet). Nil: not measured.
	Volumes *Compare `json:"volumes,omitempty"`
	// Phases split the plain pods' path at the runtime's timestamps (nil:
	// not measured).
	Phases *Phases `json:"phases,omitempty"`
}

// Agent is a density run of an agent (skiff or the kubelet).
type Agent struct {
	Pods          int           `json:"pods"`
	FirstRunningS float64       `json:"first_running_s"`
	AllRunningS   float64       `json:"all_running_s"`
	Steady        procfs.Window `json:"steady"`
	RemoveAllS    float64       `json:"remove_all_s"`
	// Profile summarises a CPU profile of the agent over the steady window
	// (skiff in the density scenario); nil: none taken, or it failed and
	// ProfileError says why.
	Profile      *cpuprof.Summary `json:"profile,omitempty"`
	ProfileError string           `json:"profile_error,omitempty"`
}

// Floor is a density run of the raw CRI floor at one parallelism.
type Floor struct {
	Pods        int `json:"pods"`
	Parallelism int `json:"parallelism"` // 0: unbounded
	// Probes: the floor also made each pod's exec readiness probe (one
	// ExecSync every 10 s from the app's start until its stop), as the
	// agents do; ProbeExecs is how many it made, ProbeFails how many failed.
	Probes        bool    `json:"probes,omitempty"`
	ProbeExecs    int64   `json:"probe_execs,omitempty"`
	ProbeFails    int64   `json:"probe_fails,omitempty"`
	FirstRunningS float64 `json:"first_running_s"`
	AllRunningS   float64 `json:"all_running_s"`
	RemoveAllS    float64 `json:"remove_all_s"`
	// ProbeWindow: the harness's own CPU while the probe floor's pods all
	// ran and probed (nil: not measured).
	ProbeWindow *ProbeWindow `json:"probe_window,omitempty"`
}

// ProbeWindow is the CPU the harness process (a bare Go CRI client) used
// over a window in which it made nothing but the probe floor's ExecSyncs.
type ProbeWindow struct {
	Seconds    float64 `json:"seconds"`
	Execs      int64   `json:"execs"`
	CPUSeconds float64 `json:"cpu_s"`
}

// MsPerExec is the window's CPU per ExecSync in milliseconds; NaN without
// execs.
func (w *ProbeWindow) MsPerExec() float64 {
	if w == nil || w.Execs <= 0 {
		return math.NaN()
	}
	return 1000 * w.CPUSeconds / float64(w.Execs)
}

// Density is scenario 2.
type Density struct {
	Pods    int     `json:"pods"`
	SteadyS float64 `json:"steady_window_s"`
	// ProbePeriodS is the pods' exec readiness probe period (0: 10 s,
	// results from before the field).
	ProbePeriodS float64 `json:"probe_period_s,omitempty"`
	Skiff        *Agent  `json:"skiff,omitempty"`
	Kubelet      *Agent  `json:"kubelet,omitempty"`
	Floor        []Floor `json:"floor,omitempty"`
}

// BestFloor returns the plain (probe-less) floor run with the shortest
// time to all running; ok is false when there is none.
func BestFloor(fs []Floor) (best Floor, ok bool) {
	for _, f := range fs {
		if f.Probes {
			continue
		}
		if !ok || f.AllRunningS < best.AllRunningS {
			best, ok = f, true
		}
	}
	return best, ok
}

// ProbeFloor returns the probe-making floor run (the first, if several);
// ok is false when there is none.
func ProbeFloor(fs []Floor) (Floor, bool) {
	for _, f := range fs {
		if f.Probes {
			return f, true
		}
	}
	return Floor{}, false
}

// Reaction is scenario 3.
type Reaction struct {
	// Sigterm: manifest deleted (floor: StopContainer called) -> the
	// container logged "received SIGTERM".
	Sigterm Compare `json:"sigterm"`
	// Liveness: liveness made to fail -> restarted container running. The
	// floor has no probes: its figure is StopContainer+Create+Start.
	Liveness Compare `json:"liveness_restart"`
	// Edit: manifest edited -> the new pod's container running. The floor
	// stops the old pod and starts the new one.
	Edit Compare `json:"edit"`
	// LivenessPeriodS is the probe period used.
	LivenessPeriodS int `json:"liveness_period_s"`
}

// Scale is scenario 4: density at one pod count.
type Scale struct {
	Pods    int    `json:"pods"`
	Skiff   *Agent `json:"skiff,omitempty"`
	Kubelet *Agent `json:"kubelet,omitempty"`
	Floor   *Floor `json:"floor,omitempty"`
}

// PerPodMs is seconds spread over pods, in milliseconds per pod.
func PerPodMs(seconds float64, pods int) float64 {
	if pods <= 0 {
		return math.NaN()
	}
	return 1000 * seconds / float64(pods)
}

// Pull is the pull scenario (issue 15): one image pulled from a loopback
// registry through skiff's API (POST /images/pull: the agent's pull path)
// and by CRI PullImage directly, alternately, the image removed before
// every pull.
type Pull struct {
	// ImageBytes is the image's compressed size (layers and config).
	ImageBytes int64 `json:"image_bytes"`
	// Skiff: request sent -> result line received. Direct: the
	// PullImage call.
	Skiff  *Series `json:"skiff,omitempty"`
	Direct *Series `json:"direct,omitempty"`
}
