package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/skiffnode/skiff/bench/internal/stats"
)

// Burst is the burst scenario: different pods (inits, probes of each kind,
// a crash loop, an OOM, a sidecar, plain ones) written into the manifest
// directory at once, per agent one after the other.
type Burst struct {
	Pods []BurstPod `json:"pods"`
	// SettleS is how long after the last first start the pods were left
	// running before Observed was read.
	SettleS float64   `json:"settle_s"`
	Skiff   *BurstRun `json:"skiff,omitempty"`
	Kubelet *BurstRun `json:"kubelet,omitempty"`
}

// BurstPod names one burst pod and what it covers.
type BurstPod struct {
	Name   string `json:"name"`
	Covers string `json:"covers"`
}

// BurstRun is one agent's burst run, by BurstPod.Name.
type BurstRun struct {
	// FirstStartS: manifests written -> the pod's first container (init
	// or app) CRI StartedAt, seconds.
	FirstStartS map[string]float64 `json:"first_start_s"`
	// Observed: the pod's containers after the settle time (state, exit
	// code, reason, runs), to check each pod did what it claims.
	Observed map[string]string `json:"observed,omitempty"`
}

// first returns pod's first start, NaN when unknown or r is nil.
func (r *BurstRun) first(pod string) float64 {
	if r == nil {
		return math.NaN()
	}
	if v, ok := r.FirstStartS[pod]; ok {
		return v
	}
	return math.NaN()
}

// summary is the median and max of the run's first starts (NaN without).
func (r *BurstRun) summary() (median, maxS float64) {
	if r == nil || len(r.FirstStartS) == 0 {
		return math.NaN(), math.NaN()
	}
	xs := make([]float64, 0, len(r.FirstStartS))
	for _, v := range r.FirstStartS {
		xs = append(xs, v)
	}
	s := stats.Summarize(xs)
	return s.Median, s.Max
}

// BurstTarget evaluates the burst target: every pod's first container no
// later under skiff than under the kubelet. Returns the status and the
// pods that missed it.
func BurstTarget(b *Burst) (Status, []string) {
	if b == nil || b.Skiff == nil || b.Kubelet == nil {
		return Unknown, nil
	}
	var late []string
	for _, p := range b.Pods {
		s, k := b.Skiff.first(p.Name), b.Kubelet.first(p.Name)
		if math.IsNaN(s) || math.IsNaN(k) {
			return Unknown, nil
		}
		if s > k {
			late = append(late, p.Name)
		}
	}
	if len(late) > 0 {
		return NotMet, late
	}
	return Met, nil
}

// burstTarget is BurstTarget as a row of the targets table.
func burstTarget(b *Burst) Target {
	t := Target{Name: fmt.Sprintf("burst, %d pods: each pod's first container vs kubelet", len(b.Pods)),
		Goal: "no pod later than under the kubelet", Value: "-"}
	st, late := BurstTarget(b)
	t.Status = st
	switch {
	case st == Unknown && b.Skiff != nil && b.Kubelet == nil:
		t.Status = NotRun
	case st == Met:
		t.Value = fmt.Sprintf("0 of %d later", len(b.Pods))
	case st == NotMet:
		t.Value = fmt.Sprintf("%d of %d later: %s", len(late), len(b.Pods), strings.Join(late, ", "))
	}
	return t
}

// writeBurst renders the burst section.
func writeBurst(b *strings.Builder, num, rt string, bu *Burst) {
	fmt.Fprintf(b, "### %s Burst, %s (%d different pods written at once)\n\n", num, rt, len(bu.Pods))
	b.WriteString("Manifests written -> the pod's first container (init or app, a crash loop's or OOM's first run) running (CRI StartedAt). ")
	b.WriteString("skiff and the kubelet one after the other, each with all pods removed before the next.\n\n")
	b.WriteString("| pod | covers | skiff | kubelet | skiff vs kubelet |\n|---|---|---|---|---|\n")
	for _, p := range bu.Pods {
		s, k := bu.Skiff.first(p.Name), bu.Kubelet.first(p.Name)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", p.Name, p.Covers, sec(s), sec(k), ratio(s, k))
	}
	sm, sx := bu.Skiff.summary()
	km, kx := bu.Kubelet.summary()
	fmt.Fprintf(b, "| **median** | | %s | %s | %s |\n", sec(sm), sec(km), ratio(sm, km))
	fmt.Fprintf(b, "| **max** | | %s | %s | %s |\n\n", sec(sx), sec(kx), ratio(sx, kx))
	st, late := BurstTarget(bu)
	switch st {
	case Met:
		fmt.Fprintf(b, "Target (goal, not assertion): every pod's first container no later than under the kubelet: **met** (%d of %d).\n\n", len(bu.Pods), len(bu.Pods))
	case NotMet:
		fmt.Fprintf(b, "Target (goal, not assertion): every pod's first container no later than under the kubelet: **not met** (%d of %d later: %s).\n\n",
			len(late), len(bu.Pods), strings.Join(late, ", "))
	default:
		b.WriteString("Target (goal, not assertion): every pod's first container no later than under the kubelet: not run (no kubelet).\n\n")
	}
	if bu.Skiff == nil && bu.Kubelet == nil {
		return
	}
	fmt.Fprintf(b, "What the pods did, %.0f s after the last first start (latest attempt per container):\n\n", bu.SettleS)
	b.WriteString("| pod | skiff | kubelet |\n|---|---|---|\n")
	seen := func(r *BurstRun, pod string) string {
		if r == nil || r.Observed[pod] == "" {
			return "-"
		}
		return r.Observed[pod]
	}
	for _, p := range bu.Pods {
		fmt.Fprintf(b, "| %s | %s | %s |\n", p.Name, seen(bu.Skiff, p.Name), seen(bu.Kubelet, p.Name))
	}
	b.WriteString("\n")
}
