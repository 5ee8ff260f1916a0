package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/stats"
)

// Shim is the control plane shim scenario (issue 17): skiff started with
// --control-plane runs skiff-apiserver and joins it; pods are created
// without spec.nodeName (the shim places them on its node).
type Shim struct {
	// Version is skiff-apiserver's /version (gitVersion).
	Version string `json:"version"`
	// ReadyColdS and ReadyWarmS: skiff-apiserver's exec -> /readyz 200,
	// from the agent's log, on a fresh data dir and on a restart of the
	// agent; 0: not measured.
	ReadyColdS float64 `json:"ready_cold_s"`
	ReadyWarmS float64 `json:"ready_warm_s"`
	// Running: create call -> status.phase Running seen by a watch;
	// Started: create call -> the app container's CRI StartedAt.
	Running *Series `json:"running,omitempty"`
	Started *Series `json:"started,omitempty"`
	// Pods and ConfigMaps: what existed during ListPods and the window.
	Pods       int `json:"pods"`
	ConfigMaps int `json:"config_maps"`
	// ListPods: LISTs of the pods as `kubectl get pods` makes them.
	ListPods *Series `json:"list_pods,omitempty"`
	// SteadyS is the window's length; Shim is skiff-apiserver's CPU and
	// RSS over it, Agent the density run with the agent's own window.
	SteadyS float64       `json:"steady_s"`
	Shim    procfs.Window `json:"shim_steady"`
	Agent   *Agent        `json:"agent,omitempty"`
	// Writes: skiff-apiserver's (its embedded etcd's) and the agent's
	// write counters over the same window (issue 33); nil: not measured.
	Writes *ControlPlaneWrites `json:"writes,omitempty"`
}

// EvaluateShim checks s against issue 17's goals: the shim's RSS and CPU
// with the pods and ConfigMaps, ready after start under l.ShimReadyS, and
// the LIST and the round trip no slower than kube-apiserver's in the same
// run (api; nil or unmeasured: NotRun). Pure.
func EvaluateShim(s *Shim, api *API, l Limits) []Target {
	rss, cpu := math.NaN(), math.NaN()
	if s.Agent != nil {
		rss, cpu = s.Shim.RSSMaxMB, s.Shim.CPUPercent
	}
	load := fmt.Sprintf("%d pods + %d ConfigMaps", s.Pods, s.ConfigMaps)
	list, round := math.NaN(), math.NaN()
	if api != nil {
		list, round = medianOrNaN(api.ListPods), medianOrNaN(api.Running.Skiff)
	}
	return []Target{
		maxTarget("shim RSS (max), "+load, l.ShimRSSMB, rss, "MB"),
		maxTarget("shim CPU, "+load, l.ShimCPUPercent, cpu, "% of a core"),
		maxTarget("shim ready after start, cold", l.ShimReadyS, positiveOrNaN(s.ReadyColdS), "s"),
		maxTarget("shim ready after start, warm", l.ShimReadyS, positiveOrNaN(s.ReadyWarmS), "s"),
		msTarget(fmt.Sprintf("kubectl get pods (%d pods) median vs kube-apiserver", s.Pods), l.ShimAPIServerRatio, medianOrNaN(s.ListPods), list),
		apiServerTarget("create -> Running median vs kube-apiserver", l.ShimAPIServerRatio, medianOrNaN(s.Running), round),
	}
}

// apiServerTarget is ratioTarget against kube-apiserver, NotRun when the
// shim was measured and kube-apiserver was not.
func apiServerTarget(name string, limit, shim, kube float64) Target {
	t := ratioTarget(name, "kube-apiserver", limit, shim, kube)
	if math.IsNaN(kube) && !math.IsNaN(shim) {
		t.Status = NotRun
	}
	return t
}

// msTarget is apiServerTarget with its figures in milliseconds.
func msTarget(name string, limit, shim, kube float64) Target {
	t := apiServerTarget(name, limit, shim, kube)
	if r := stats.Ratio(shim, kube); !math.IsNaN(r) {
		t.Value = fmt.Sprintf("%.2fx (%.1f ms vs %.1f ms)", r, shim*1000, kube*1000)
	}
	return t
}

func medianOrNaN(s *Series) float64 {
	if s == nil {
		return math.NaN()
	}
	return s.Summary.Median
}

func positiveOrNaN(v float64) float64 {
	if v <= 0 {
		return math.NaN()
	}
	return v
}

// writeShim writes the shim section: its targets, then its figures beside
// kube-apiserver's from the API scenario of the same run (api may be nil).
func writeShim(b *strings.Builder, num, rt string, s *Shim, api *API, l Limits) {
	fmt.Fprintf(b, "### %s Control plane shim, %s (issue 17: skiff-apiserver %s)\n\n", num, rt, s.Version)
	b.WriteString("skiff started with --control-plane (skiff-apiserver as its child); pods created without spec.nodeName (the shim places them). ")
	b.WriteString("kube-apiserver's figures are the API pods scenario's in the same run (same containerd, same agent, pods bound by spec.nodeName).\n\n")
	b.WriteString("| target | goal | skiff-apiserver | status |\n|---|---|---|---|\n")
	for _, t := range EvaluateShim(s, api, l) {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Name, t.Goal, t.Value, t.Status)
	}
	kube := api
	if kube == nil {
		kube = &API{}
	}
	kdens := kube.Density
	if kdens == nil {
		kdens = &Density{}
	}
	b.WriteString("\n| | skiff-apiserver | kube-apiserver |\n|---|---|---|\n")
	fmt.Fprintf(b, "| create -> Running in the API, median (n) | %s | %s |\n", medianN(s.Running), medianN(kube.Running.Skiff))
	fmt.Fprintf(b, "| create -> app StartedAt, median (n) | %s | %s |\n", medianN(s.Started), medianN(kube.Startup.Skiff))
	fmt.Fprintf(b, "| kubectl get pods, %d pods, median (n) | %s | %s |\n", s.Pods, medianMsN(s.ListPods), medianMsN(kube.ListPods))
	fmt.Fprintf(b, "| ready after start: cold / warm | %s / %s | - |\n", secOrDash(s.ReadyColdS), secOrDash(s.ReadyWarmS))
	if s.Agent != nil {
		fmt.Fprintf(b, "| API server CPU / RSS mean / max (%.0f s window) | %.2f %% / %.1f / %.1f MB | - |\n",
			s.SteadyS, s.Shim.CPUPercent, s.Shim.RSSMeanMB, s.Shim.RSSMaxMB)
		fmt.Fprintf(b, "| agent CPU / RSS max | %.2f %% / %.1f MB | %s |\n", s.Agent.Steady.CPUPercent, s.Agent.Steady.RSSMaxMB, agentSteady(kdens.Skiff))
		fmt.Fprintf(b, "| %d pods all running / remove all | %s / %s | %s |\n", s.Pods, sec(s.Agent.AllRunningS), sec(s.Agent.RemoveAllS), agentSpan(kdens.Skiff))
	}
	b.WriteString("\n")
}

// medianN is a series' median with its sample count, "-" for none.
func medianN(s *Series) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", sec(s.Summary.Median), s.Summary.N)
}

// medianMsN is medianN in milliseconds.
func medianMsN(s *Series) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f ms (%d)", s.Summary.Median*1000, s.Summary.N)
}

func secOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return sec(v)
}

func agentSteady(a *Agent) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f %% / %.1f MB", a.Steady.CPUPercent, a.Steady.RSSMaxMB)
}

func agentSpan(a *Agent) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%s / %s", sec(a.AllRunningS), sec(a.RemoveAllS))
}
