package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// writeWhy writes, under the targets table, for every target of ts that
// is not met what this run's own measurements say about the cause:
// nothing here is a figure from another run. Nothing when none is missed.
func writeWhy(b *strings.Builder, run Run, ts []Target, l Limits) {
	var missed []Target
	for _, t := range ts {
		if t.Status == NotMet {
			missed = append(missed, t)
		}
	}
	if len(missed) == 0 {
		return
	}
	fmt.Fprintf(b, "#### Targets missed, %s: why (from this run's measurements)\n\n", run.Runtime)
	densityShown := false
	for _, t := range missed {
		fmt.Fprintf(b, "**%s**: %s (goal %s).\n\n", t.Name, t.Value, t.Goal)
		switch t.Kind {
		case KindStartup:
			whyStartup(b, run.Startup.Compare, run.Startup.Phases)
		case KindStartupVolumes:
			whyStartup(b, *run.Startup.Volumes, nil)
		case KindSteadyCPU:
			whySteadyCPU(b, run.Density, l)
		case KindBurst:
			whyBurst(b, run.Burst)
		case KindScaleFlat:
			whyScale(b, run.Scale)
		case KindFootprint:
			whyFootprint(b, run.Footprint, l.FootprintKubeletRatio)
		case KindDensityKubelet, KindDensityFloor:
			if densityShown {
				b.WriteString("- See the density table above.\n\n")
				break
			}
			densityShown = true
			whyDensity(b, run.Density)
		default:
			b.WriteString("- This run takes no breakdown of this figure.\n\n")
		}
	}
}

// whyStartup sets skiff's startup series against the floor's: the gap at
// the minimum, median and p90, the floor's own spread beside it, and with
// phases where on the path the time goes.
func whyStartup(b *strings.Builder, c Compare, ph *Phases) {
	if c.Skiff == nil || c.Floor == nil {
		b.WriteString("- Not measured.\n\n")
		return
	}
	s, f := c.Skiff.Summary, c.Floor.Summary
	fmt.Fprintf(b, "- skiff minus floor, per pod: %s at the minimum (%s vs %s), %s at the median, %s at p90 (n = %d each).\n",
		msDiff(s.Min, f.Min), sec(s.Min), sec(f.Min), msDiff(s.Median, f.Median), msDiff(s.P90, f.P90), s.N)
	if d := s.Median - f.Median; d > 0 && math.Abs(s.Min-f.Min) < d/4 {
		b.WriteString("- At the minimum skiff is within a quarter of the median gap of the floor: the gap is less a fixed cost per pod than how many of skiff's pods take the slower path.\n")
	}
	fmt.Fprintf(b, "- The floor's own samples spread over %.0f ms (%s to %s); the median gap is %.0f %% of that spread.\n",
		1000*(f.Max-f.Min), sec(f.Min), sec(f.Max), 100*(s.Median-f.Median)/math.Max(f.Max-f.Min, 1e-9))
	if c.Kubelet != nil {
		fmt.Fprintf(b, "- The kubelet's median on the same pods: %s (%s the floor's).\n", sec(c.Kubelet.Summary.Median),
			ratio(c.Kubelet.Summary.Median, f.Median))
	}
	b.WriteString("- What differs on that path: skiff is timed from the manifest's rename, the floor from its first CRI call; ")
	b.WriteString("skiff reads the manifest after its watch fires, admits the pod, creates its cgroup, and learns of the init container's exit ")
	b.WriteString("from containerd's event stream and its relist, where the floor polls ContainerStatus every 10 ms.\n")
	if ph == nil || len(ph.Skiff) == 0 || len(ph.Floor) == 0 {
		b.WriteString("- This run has no per-phase timestamps of these pods.\n\n")
		return
	}
	b.WriteString("\n")
	writePhases(b, ph)
}

// msDiff formats a-b seconds as signed milliseconds ("+0 ms", never "-0").
func msDiff(a, b float64) string {
	return fmt.Sprintf("%+.0f ms", roundMs(a-b))
}

// roundMs is seconds in whole milliseconds, never -0.
func roundMs(s float64) float64 {
	d := math.Round(1000 * s)
	if d == 0 {
		return 0 // not -0
	}
	return d
}

// whySteadyCPU explains skiff's steady CPU by the exec probes it makes
// (per exec, beside the kubelet and the probe floor's bare client) and by
// its CPU profile's buckets.
func whySteadyCPU(b *strings.Builder, d *Density, l Limits) {
	if d == nil || d.Skiff == nil {
		b.WriteString("- Not measured.\n\n")
		return
	}
	w := d.Skiff.Steady
	period := d.probePeriod()
	execs := float64(d.Pods) * w.Seconds / period
	cpuS := w.CPUPercent * w.Seconds / 100
	fmt.Fprintf(b, "- skiff used %.2f s of CPU over the %.0f s window (%.2f %% of a core). Its pods' exec readiness probes are about %.0f ExecSyncs in that window (%d pods, one every %.0f s each): %.2f ms of skiff's CPU per probe exec, all its work counted.\n",
		cpuS, w.Seconds, w.CPUPercent, execs, d.Pods, period, 1000*cpuS/execs)
	if k := d.Kubelet; k != nil {
		kexecs := float64(k.Pods) * k.Steady.Seconds / period
		fmt.Fprintf(b, "- The kubelet, same pods and probes: %.2f %% of a core, %.2f ms per probe exec.\n",
			k.Steady.CPUPercent, 1000*k.Steady.CPUPercent*k.Steady.Seconds/100/kexecs)
	}
	if pf, ok := ProbeFloor(d.Floor); ok && pf.ProbeWindow != nil && pf.ProbeWindow.Execs > 0 {
		pw := pf.ProbeWindow
		fmt.Fprintf(b, "- A bare Go CRI client making the same ExecSyncs (the probe floor: the harness's own CPU over %.0f s, %d execs): %.2f ms per exec; at %d pods that alone is %.2f %% of a core.\n",
			pw.Seconds, pw.Execs, pw.MsPerExec(), d.Pods, float64(d.Pods)/period*pw.MsPerExec()/10)
	}
	if w.CPUPercent > 0 {
		fmt.Fprintf(b, "- Meeting %.2f %% means %.2f points less: %.0f %% of skiff's steady CPU.\n",
			l.SteadyCPUPercent, w.CPUPercent-l.SteadyCPUPercent, 100*(w.CPUPercent-l.SteadyCPUPercent)/w.CPUPercent)
	}
	writeProfileBuckets(b, d.Skiff)
}

// probePeriod is the density pods' probe period in seconds (10 s when the
// results predate the field).
func (d *Density) probePeriod() float64 {
	if d.ProbePeriodS > 0 {
		return d.ProbePeriodS
	}
	return 10
}

// whyBurst lists the pods skiff started later than the kubelet, by how
// much, and where they fell in skiff's order of first starts.
func whyBurst(b *strings.Builder, bu *Burst) {
	_, late := BurstTarget(bu)
	rank := startOrder(bu.Skiff)
	b.WriteString("| pod | covers | skiff | kubelet | later by | skiff's start order |\n|---|---|---|---|---|---|\n")
	covers := map[string]string{}
	for _, p := range bu.Pods {
		covers[p.Name] = p.Covers
	}
	lastHalf := 0
	for _, name := range late {
		s, k := bu.Skiff.first(name), bu.Kubelet.first(name)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d of %d |\n", name, covers[name], sec(s), sec(k), msDiff(s, k), rank[name], len(rank))
		if 2*rank[name] > len(rank) {
			lastHalf++
		}
	}
	smin, smax := spanOfRun(bu.Skiff)
	kmin, kmax := spanOfRun(bu.Kubelet)
	sm, _ := bu.Skiff.summary()
	km, _ := bu.Kubelet.summary()
	fmt.Fprintf(b, "\n- skiff's first starts span %s to %s (%.0f ms, median %s); the kubelet's %s to %s (%.0f ms, median %s).\n",
		sec(smin), sec(smax), 1000*(smax-smin), sec(sm), sec(kmin), sec(kmax), 1000*(kmax-kmin), sec(km))
	fmt.Fprintf(b, "- %d of the %d late pods are in the later half of skiff's start order.", lastHalf, len(late))
	if 2*lastHalf > len(late) && smax-smin > kmax-kmin {
		b.WriteString(" skiff starts a burst's pods through its start gate, a few at a time in arrival order, where the kubelet starts them all at once: ")
		b.WriteString("skiff's first starts spread wider than the kubelet's, its early pods sooner and its last ones later.")
	}
	b.WriteString("\n\n")
}

// startOrder ranks r's pods by first start (1: the earliest; ties by name).
func startOrder(r *BurstRun) map[string]int {
	names := make([]string, 0, len(r.FirstStartS))
	for n := range r.FirstStartS {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(r.FirstStartS[a], r.FirstStartS[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make(map[string]int, len(names))
	for i, n := range names {
		out[n] = i + 1
	}
	return out
}

// spanOfRun is the earliest and the latest first start of r (NaN without).
func spanOfRun(r *BurstRun) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	if r == nil {
		return lo, hi
	}
	for _, v := range r.FirstStartS {
		if math.IsNaN(lo) || v < lo {
			lo = v
		}
		if math.IsNaN(hi) || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// whyScale sets skiff's cost per pod across the scale curve against the
// plain floor's at the points where the floor ran.
func whyScale(b *strings.Builder, sc []Scale) {
	b.WriteString("| pods | skiff per pod | floor per pod | skiff vs floor |\n|---|---|---|---|\n")
	var withFloor []Scale
	for _, s := range sc {
		if s.Skiff == nil {
			continue
		}
		fl := math.NaN()
		if s.Floor != nil {
			fl = PerPodMs(s.Floor.AllRunningS, s.Pods)
			withFloor = append(withFloor, s)
		}
		sk := PerPodMs(s.Skiff.AllRunningS, s.Pods)
		fmt.Fprintf(b, "| %d | %.0f ms | %s | %s |\n", s.Pods, sk, ms(fl), ratio(sk, fl))
	}
	b.WriteString("\n")
	if len(withFloor) < 2 {
		b.WriteString("- The plain floor ran at fewer than two of these points: this run cannot separate skiff's growth per pod from containerd's and the kernel's.\n\n")
		return
	}
	lo, hi := withFloor[0], withFloor[len(withFloor)-1]
	sg := PerPodMs(hi.Skiff.AllRunningS, hi.Pods) / PerPodMs(lo.Skiff.AllRunningS, lo.Pods)
	fg := PerPodMs(hi.Floor.AllRunningS, hi.Pods) / PerPodMs(lo.Floor.AllRunningS, lo.Pods)
	fmt.Fprintf(b, "- From %d to %d pods skiff's cost per pod grows %.2fx, the plain floor's (the same pods' CRI calls, no probes) %.2fx.\n",
		lo.Pods, hi.Pods, sg, fg)
	if fg >= sg {
		b.WriteString("- The floor's own cost per pod grows as much or more: the growth is containerd's, runc's and the kernel's per-pod work (and, for skiff, its pods' exec probes competing with the starts), not skiff's bookkeeping.\n\n")
		return
	}
	fmt.Fprintf(b, "- skiff grows %.2fx more than the floor: its ratio to the floor rises from %s to %s. Beyond the floor's work skiff also runs every pod's exec probe (%d pods at the highest point), which competes with the starts.\n\n",
		sg/fg, ratio(lo.Skiff.AllRunningS, lo.Floor.AllRunningS), ratio(hi.Skiff.AllRunningS, hi.Floor.AllRunningS), hi.Pods)
}

// ms formats milliseconds; NaN is "-".
func ms(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", v)
}

// whyDensity sets skiff's time to all pods running against every floor
// of the run (each parallelism, with and without probes) and the
// kubelet's: where skiff falls among start strategies of known cost.
func whyDensity(b *strings.Builder, d *Density) {
	if d == nil || d.Skiff == nil || len(d.Floor) == 0 {
		b.WriteString("- Not measured.\n\n")
		return
	}
	b.WriteString("| who | starts in flight | first running | all running | skiff vs it |\n|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| skiff | adaptive (its start gate) | %s | %s | 1.00x |\n", sec(d.Skiff.FirstRunningS), sec(d.Skiff.AllRunningS))
	for _, f := range d.Floor {
		who := "CRI floor"
		if f.Probes {
			who += " + probes"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", who, parallelismName(f.Parallelism),
			sec(f.FirstRunningS), sec(f.AllRunningS), ratio(d.Skiff.AllRunningS, f.AllRunningS))
	}
	if k := d.Kubelet; k != nil {
		fmt.Fprintf(b, "| kubelet | all at once | %s | %s | %s |\n", sec(k.FirstRunningS), sec(k.AllRunningS), ratio(d.Skiff.AllRunningS, k.AllRunningS))
	}
	b.WriteString("\n")
	best, ok := BestFloor(d.Floor)
	if !ok {
		return
	}
	fmt.Fprintf(b, "- The fastest way to start these pods on this runtime was the floor with %s starts in flight (%s).",
		parallelismName(best.Parallelism), sec(best.AllRunningS))
	if best.Parallelism == 0 {
		b.WriteString(" Every start at once was fastest here: more starts in flight paid on this runtime and machine, so a gate that admits a few at a time (skiff's adaptive one, the bounded floors) finishes the last pod later, in exchange for its first pods running sooner (first running above).")
	}
	b.WriteString("\n")
	if k := d.Kubelet; k != nil && k.AllRunningS < d.Skiff.AllRunningS {
		fmt.Fprintf(b, "- The kubelet starts every pod at once (first running %s) and was done %s sooner than skiff.\n",
			sec(k.FirstRunningS), sec(d.Skiff.AllRunningS-k.AllRunningS))
	}
	if pf, ok := ProbeFloor(d.Floor); ok {
		fmt.Fprintf(b, "- With each pod's exec probe made too, the floor took %s (%s its plain run): the probes' execs compete with the starts, for skiff as for the floor.\n",
			sec(pf.AllRunningS), ratio(pf.AllRunningS, best.AllRunningS))
	}
	b.WriteString("\n")
}

// parallelismName names a floor's parallelism (0: unbounded).
func parallelismName(p int) string {
	if p == 0 {
		return "unbounded"
	}
	return fmt.Sprint(p)
}
