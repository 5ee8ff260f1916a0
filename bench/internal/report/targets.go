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
)

// Target is one of the issue's goals, evaluated.
type Target struct {
	Name   string `json:"name"`
	Goal   string `json:"goal"`
	Value  string `json:"value"`
	Status Status `json:"status"`
}

// Limits are the issue's targets. Goals, reported, never asserted.
type Limits struct {
	StartupMedianRatio float64 // skiff median / floor median
	StartupP90Ratio    float64 // skiff p90 / floor p90
	DensityAllRatio    float64 // skiff all running / best floor all running
	DensityFirstS      float64 // skiff first pod running
	SteadyCPUPercent   float64 // % of one core
	SteadyRSSMB        float64 // max RSS over the window
	SigtermS           float64 // median manifest deleted -> SIGTERM
}

// IssueLimits are the targets of issue 5.
var IssueLimits = Limits{
	StartupMedianRatio: 1.15,
	StartupP90Ratio:    1.3,
	DensityAllRatio:    1.1,
	DensityFirstS:      1,
	SteadyCPUPercent:   2,
	SteadyRSSMB:        50,
	SigtermS:           0.1,
}

// Evaluate checks r against l; a figure that was not measured gives
// Unknown.
func Evaluate(r *Results, l Limits) []Target {
	var out []Target
	var smed, fmed, sp90, fp90 = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if s := r.Startup; s != nil && s.Skiff != nil && s.Floor != nil {
		smed, fmed = s.Skiff.Summary.Median, s.Floor.Summary.Median
		sp90, fp90 = s.Skiff.Summary.P90, s.Floor.Summary.P90
	}
	out = append(out,
		ratioTarget("startup median", l.StartupMedianRatio, smed, fmed),
		ratioTarget("startup p90", l.StartupP90Ratio, sp90, fp90))

	all, best, first := math.NaN(), math.NaN(), math.NaN()
	cpu, rss := math.NaN(), math.NaN()
	pods := 0
	if d := r.Density; d != nil && d.Skiff != nil {
		pods = d.Pods
		all, first = d.Skiff.AllRunningS, d.Skiff.FirstRunningS
		cpu, rss = d.Skiff.Steady.CPUPercent, d.Skiff.Steady.RSSMaxMB
		if b, ok := BestFloor(d.Floor); ok {
			best = b.AllRunningS
		}
	}
	out = append(out,
		ratioTarget(fmt.Sprintf("%d pods all running vs best floor", pods), l.DensityAllRatio, all, best),
		maxTarget(fmt.Sprintf("%d pods: first running", pods), l.DensityFirstS, first, "s"),
		maxTarget(fmt.Sprintf("steady state, %d pods: CPU", pods), l.SteadyCPUPercent, cpu, "% of a core"),
		maxTarget(fmt.Sprintf("steady state, %d pods: RSS (max)", pods), l.SteadyRSSMB, rss, "MB"))

	sig := math.NaN()
	if rc := r.Reaction; rc != nil && rc.Sigterm.Skiff != nil {
		sig = rc.Sigterm.Skiff.Summary.Median
	}
	out = append(out, maxTarget("deleted manifest -> SIGTERM (median)", l.SigtermS*1000, sig*1000, "ms"))
	return out
}

// ratioTarget: a/b must be at most limit.
func ratioTarget(name string, limit, a, b float64) Target {
	t := Target{Name: name, Goal: fmt.Sprintf("<= %.2fx floor", limit)}
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
