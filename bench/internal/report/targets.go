package report

import (
	"fmt"
	"math"

	"github.com/skiffnode/skiff/bench/internal/stats"
)

// Status of a target.
type Status string

// Target statuses.
const (
	Met     Status = "met"
	NotMet  Status = "not met"
	Unknown Status = "not measured"
	// NotRun: the comparison needs the kubelet, which did not run.
	NotRun Status = "not run"
)

// Target kinds (Target.Kind): which measurement a target judges, so that
// the report can explain a missed one.
const (
	KindStartup        = "startup"
	KindStartupVolumes = "startup-volumes"
	KindDensityKubelet = "density-vs-kubelet"
	KindDensityFloor   = "density-vs-floor"
	KindFirstRunning   = "first-running"
	KindSteadyCPU      = "steady-cpu"
	KindSteadyRSS      = "steady-rss"
	KindBurst          = "burst"
	KindScaleFlat      = "scale-flat"
	KindPull           = "pull"
	KindFootprint      = "footprint"
)

// Target is one of the issue's goals, evaluated.
type Target struct {
	Kind   string `json:"kind,omitempty"`
	Name   string `json:"name"`
	Goal   string `json:"goal"`
	Value  string `json:"value"`
	Status Status `json:"status"`
}

// Limits are the issue's targets. Goals, reported, never asserted.
type Limits struct {
	StartupMedianRatio float64 // skiff median / floor median
	// StartupVolumesMedianRatio: the same for the startup pods with
	// volumes (emptyDir, configMap, downwardAPI; issue 14).
	StartupVolumesMedianRatio float64
	DensityAllRatio           float64 // skiff all running / the probe-making floor's all running
	// DensityKubeletRatio: skiff all running / the kubelet's all running
	// (0.9: at least 10% sooner).
	DensityKubeletRatio float64
	DensityFirstS       float64 // skiff first pod running (managed runtime)
	SteadyCPUPercent    float64 // % of one core
	SteadyRSSMB         float64 // max RSS over the window
	// ScaleFlatRatio: skiff's growth of the time per pod (all running /
	// pods) from the lowest to the highest scale point over the floor's
	// growth between the same points (managed runtime; issue 35: no more).
	ScaleFlatRatio float64
	// FootprintKubeletRatio: the whole node's PSS with skiff over the
	// kubelet's at the density pods on the same runtime (issue 35: at
	// least 30 % below).
	FootprintKubeletRatio float64
	// PullMedianRatio: skiff's pull median / CRI PullImage's (issue 15).
	PullMedianRatio float64
	// APIKubeletRatio: skiff / the kubelet for API pods, startup median
	// and all running (issue 16: ahead of the kubelet).
	APIKubeletRatio float64
	// APIRSSMB: skiff's max RSS with the API scenario's density pods
	// (issue 16: under 50 MB at 110 pods).
	APIRSSMB float64
	// ShimRSSMB, ShimCPUPercent: skiff-apiserver's max RSS and CPU (% of
	// a core) with the density pods and the ConfigMaps (issue 17: under
	// 80 MB and 1 %); ShimReadyS: its exec -> /readyz 200 (under 1 s);
	// ShimAPIServerRatio: its LIST and round trip / kube-apiserver's
	// (faster than it).
	ShimRSSMB, ShimCPUPercent, ShimReadyS, ShimAPIServerRatio float64
	// ShimServicesRSSMB: skiff-apiserver's max RSS with the density pods,
	// the Services and the ConfigMaps, its service proxy and cluster DNS
	// on (issue 36: under 120 MB with 110 pods, 50 Services and 200
	// ConfigMaps); ShimNodeIdleRSSMB: the whole node with --control-plane
	// (agent, API server, runtime) idle, the max of its summed RSS
	// (issue 36: under 200 MB).
	ShimServicesRSSMB, ShimNodeIdleRSSMB float64
	// WritesMBPerHour: skiff's own steady writes (/proc/<pid>/io
	// write_bytes) per hour at the density pods; WritesKubeletFactor: how
	// many times below the kubelet's in the same run (issue 33: under 1
	// MB/h, at least 10x).
	WritesMBPerHour, WritesKubeletFactor float64
}

// IssueLimits are the targets of issue 13 (issue 5's, tightened, on both
// runtimes), plus issue 14's startup with volumes, issue 15's pull and
// issue 16's API pods, issue 17's control plane shim and issue 33's
// storage writes, with issue 35's startup (1.10x), growth (the floor's)
// and node footprint (0.70x the kubelet's) and issue 36's API server with
// Services and whole node with --control-plane.
var IssueLimits = Limits{
	StartupMedianRatio:        1.10,
	StartupVolumesMedianRatio: 1.15,
	DensityAllRatio:           1.1,
	DensityKubeletRatio:       0.9,
	DensityFirstS:             1,
	SteadyCPUPercent:          1.5,
	SteadyRSSMB:               45,
	ScaleFlatRatio:            1,
	FootprintKubeletRatio:     0.7,
	PullMedianRatio:           1.05,
	APIKubeletRatio:           1,
	APIRSSMB:                  50,
	ShimRSSMB:                 80,
	ShimCPUPercent:            1,
	ShimReadyS:                1,
	ShimAPIServerRatio:        1,
	ShimServicesRSSMB:         120,
	ShimNodeIdleRSSMB:         200,
	WritesMBPerHour:           1,
	WritesKubeletFactor:       10,
}

// Evaluate checks run r against l; a figure that was not measured gives
// Unknown, a comparison with the kubelet that did not run NotRun. The
// first-pod and scale targets are the managed runtime's only. Pure.
func Evaluate(r Run, l Limits) []Target {
	var out []Target
	smed, fmed := math.NaN(), math.NaN()
	if s := r.Startup; s != nil && s.Skiff != nil && s.Floor != nil {
		smed, fmed = s.Skiff.Summary.Median, s.Floor.Summary.Median
	}
	out = append(out, kind(KindStartup, ratioTarget("startup median vs floor", "floor", l.StartupMedianRatio, smed, fmed)))
	vsmed, vfmed := math.NaN(), math.NaN()
	if s := r.Startup; s != nil && s.Volumes != nil && s.Volumes.Skiff != nil && s.Volumes.Floor != nil {
		vsmed, vfmed = s.Volumes.Skiff.Summary.Median, s.Volumes.Floor.Summary.Median
	}
	out = append(out, kind(KindStartupVolumes, ratioTarget("startup with volumes median vs floor", "floor", l.StartupVolumesMedianRatio, vsmed, vfmed)))

	all, best, kube, first := math.NaN(), math.NaN(), math.NaN(), math.NaN()
	cpu, rss := math.NaN(), math.NaN()
	pods, kubeletRan := "density", false
	if d := r.Density; d != nil && d.Skiff != nil {
		pods = fmt.Sprintf("%d pods", d.Pods)
		all, first = d.Skiff.AllRunningS, d.Skiff.FirstRunningS
		cpu, rss = d.Skiff.Steady.CPUPercent, d.Skiff.Steady.RSSMaxMB
		if p, ok := ProbeFloor(d.Floor); ok {
			best = p.AllRunningS
		}
		if d.Kubelet != nil {
			kube, kubeletRan = d.Kubelet.AllRunningS, true
		}
	}
	vsKubelet := kind(KindDensityKubelet, ratioTarget(pods+" all running vs kubelet", "kubelet", l.DensityKubeletRatio, all, kube))
	if !kubeletRan && !math.IsNaN(all) {
		vsKubelet.Status = NotRun
	}
	out = append(out, vsKubelet,
		kind(KindDensityFloor, ratioTarget(pods+" all running vs floor + probes", "floor + probes", l.DensityAllRatio, all, best)))
	if r.Runtime == RuntimeManaged {
		out = append(out, kind(KindFirstRunning, maxTarget(pods+": first running", l.DensityFirstS, first, "s")))
	}
	out = append(out,
		kind(KindSteadyCPU, maxTarget("steady state, "+pods+": CPU", l.SteadyCPUPercent, cpu, "% of a core")),
		kind(KindSteadyRSS, maxTarget("steady state, "+pods+": RSS (max)", l.SteadyRSSMB, rss, "MB")))
	if r.Burst != nil {
		out = append(out, kind(KindBurst, burstTarget(r.Burst)))
	}
	if r.Footprint != nil {
		out = append(out, kind(KindFootprint, footprintTarget(r.Footprint, l.FootprintKubeletRatio)))
	}
	if r.Runtime == RuntimeManaged {
		out = append(out, kind(KindScaleFlat, flatTarget(r.Scale, l.ScaleFlatRatio)))
	}
	if p := r.Pull; p != nil {
		sm, dm := math.NaN(), math.NaN()
		if p.Skiff != nil && p.Direct != nil {
			sm, dm = p.Skiff.Summary.Median, p.Direct.Summary.Median
		}
		out = append(out, kind(KindPull, ratioTarget("image pull median vs CRI PullImage", "PullImage", l.PullMedianRatio, sm, dm)))
	}
	return out
}

// kind returns t with Kind k.
func kind(k string, t Target) Target {
	t.Kind = k
	return t
}

// flatTarget (issue 35): skiff's cost per pod (all running / pods) must
// grow from the lowest to the highest scale point no more than limit times
// the plain floor's own growth between the same points (the runtime's and
// the kernel's per-pod work grows with the pods too). Only points where
// the floor ran count.
func flatTarget(sc []Scale, limit float64) Target {
	var pts []Scale
	for _, s := range sc {
		if s.Skiff != nil && s.Floor != nil && s.Pods > 0 {
			pts = append(pts, s)
		}
	}
	t := Target{Name: "cost per pod growth across the scale curve vs the floor's", Goal: fmt.Sprintf("<= %.2fx the floor's growth", limit)}
	if len(pts) < 2 {
		t.Value, t.Status = "-", Unknown
		return t
	}
	lo, hi := pts[0], pts[0]
	for _, p := range pts {
		if p.Pods < lo.Pods {
			lo = p
		}
		if p.Pods > hi.Pods {
			hi = p
		}
	}
	sg := PerPodMs(hi.Skiff.AllRunningS, hi.Pods) / PerPodMs(lo.Skiff.AllRunningS, lo.Pods)
	fg := PerPodMs(hi.Floor.AllRunningS, hi.Pods) / PerPodMs(lo.Floor.AllRunningS, lo.Pods)
	t.Name = fmt.Sprintf("cost per pod growth, %d to %d pods, vs the floor's", lo.Pods, hi.Pods)
	t.Value = fmt.Sprintf("%.2fx (%.0f to %.0f ms per pod; the floor %.2fx)", sg, PerPodMs(lo.Skiff.AllRunningS, lo.Pods), PerPodMs(hi.Skiff.AllRunningS, hi.Pods), fg)
	t.Status = status(sg <= limit*fg)
	return t
}

// footprintTarget (issue 35): the whole node's PSS with skiff (agent,
// containerd, shims, pause) at the density pods must be at most limit
// times the kubelet's on the same runtime.
func footprintTarget(fp *Footprint, limit float64) Target {
	t := Target{Name: "node footprint (PSS) vs the kubelet's", Goal: fmt.Sprintf("<= %.2fx kubelet", limit)}
	if fp == nil || fp.Loaded == nil || fp.Kubelet == nil || fp.Loaded.Total.PSSMaxMB == 0 || fp.Kubelet.Total.PSSMaxMB == 0 {
		t.Value, t.Status = "-", Unknown
		if fp != nil && fp.Loaded != nil && fp.Kubelet == nil {
			t.Status = NotRun
		}
		return t
	}
	s, k := fp.Loaded.Total.PSSMaxMB, fp.Kubelet.Total.PSSMaxMB
	t.Name = fmt.Sprintf("node footprint (PSS), %d pods, vs the kubelet's", fp.Loaded.Pods)
	t.Value = fmt.Sprintf("%.2fx (%.0f MB vs %.0f MB)", s/k, s, k)
	t.Status = status(s/k <= limit)
	return t
}

// ratioTarget: a/b must be at most limit; of names b in the goal.
func ratioTarget(name, of string, limit, a, b float64) Target {
	t := Target{Name: name, Goal: fmt.Sprintf("<= %.2fx %s", limit, of)}
	r := stats.Ratio(a, b)
	if math.IsNaN(r) {
		t.Value, t.Status = "-", Unknown
		return t
	}
	t.Value = fmt.Sprintf("%.2fx (%.3f s vs %.3f s)", r, a, b)
	t.Status = status(r <= limit)
	return t
}

// maxTarget: v must be below limit.
func maxTarget(name string, limit, v float64, unit string) Target {
	t := Target{Name: name, Goal: fmt.Sprintf("< %s %s", trim(limit), unit)}
	if math.IsNaN(v) {
		t.Value, t.Status = "-", Unknown
		return t
	}
	t.Value = fmt.Sprintf("%s %s", trim(v), unit)
	t.Status = status(v < limit)
	return t
}

func status(ok bool) Status {
	if ok {
		return Met
	}
	return NotMet
}

// trim formats v with up to three significant decimals.
func trim(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
