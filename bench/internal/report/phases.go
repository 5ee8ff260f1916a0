package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/skiffnode/skiff/bench/internal/stats"
)

// Phases split the startup pods' path (the startup figure's start -> the
// app's CRI StartedAt) at the runtime's own timestamps: the sandbox's
// CreatedAt and the init and app containers' CreatedAt, StartedAt and the
// init's FinishedAt. Each pod is one row of seconds, one per name.
type Phases struct {
	Names   []string    `json:"names"`
	Skiff   [][]float64 `json:"skiff,omitempty"`
	Floor   [][]float64 `json:"floor,omitempty"`
	Kubelet [][]float64 `json:"kubelet,omitempty"`
}

// Series of Phases, for Add.
const (
	PhasesSkiff   = "skiff"
	PhasesFloor   = "floor"
	PhasesKubelet = "kubelet"
)

// Add appends one pod's phases to p's series of agent (PhasesSkiff,
// PhasesFloor or PhasesKubelet); a row of the wrong length (phases not
// read) or an unknown series is left out. A nil p records nothing.
func (p *Phases) Add(agent string, phases []float64) {
	if p == nil || len(phases) != len(p.Names) {
		return
	}
	switch agent {
	case PhasesSkiff:
		p.Skiff = append(p.Skiff, phases)
	case PhasesFloor:
		p.Floor = append(p.Floor, phases)
	case PhasesKubelet:
		p.Kubelet = append(p.Kubelet, phases)
	}
}

// medians is each phase's median over rows; nil without rows.
func (p *Phases) medians(rows [][]float64) []float64 {
	if len(rows) == 0 {
		return nil
	}
	out := make([]float64, len(p.Names))
	for i := range p.Names {
		col := make([]float64, len(rows))
		for j, r := range rows {
			col[j] = r[i]
		}
		out[i] = stats.Median(col)
	}
	return out
}

// writePhases sets skiff's median phases beside the floor's (and the
// kubelet's) and names the phase where skiff is furthest behind the floor.
func writePhases(b *strings.Builder, p *Phases) {
	if p == nil {
		return
	}
	sk, fl, kb := p.medians(p.Skiff), p.medians(p.Floor), p.medians(p.Kubelet)
	if sk == nil || fl == nil {
		return
	}
	fmt.Fprintf(b, "- Where the time goes: each pod's path split at the runtime's own timestamps, medians per phase (skiff n = %d, floor n = %d; \"start\" is the manifest's rename for skiff, the first CRI call for the floor):\n\n",
		len(p.Skiff), len(p.Floor))
	b.WriteString("| phase | skiff | floor | skiff - floor | kubelet |\n|---|---|---|---|---|\n")
	worst, worstDiff := -1, math.Inf(-1)
	for i, name := range p.Names {
		k := "-"
		if kb != nil {
			k = fmt.Sprintf("%.0f ms", 1000*kb[i])
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", name, ms(roundMs(sk[i])), ms(roundMs(fl[i])), msDiff(sk[i], fl[i]), k)
		if d := sk[i] - fl[i]; d > worstDiff {
			worst, worstDiff = i, d
		}
	}
	fmt.Fprintf(b, "\n  The largest difference of medians is \"%s\" (%s). Medians of phases need not add up to the median of the whole.\n\n", p.Names[worst], msDiff(sk[worst], fl[worst]))
}
