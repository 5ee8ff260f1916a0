package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/skiffnode/skiff/bench/internal/cpuprof"
)

// profileRows is how many functions of a profile the report lists each way.
const profileRows = 10

// writeProfileBuckets writes a's CPU profile broken into buckets, largest
// first, with each one's share of the sampled CPU; or why there is none.
func writeProfileBuckets(b *strings.Builder, a *Agent) {
	p := a.Profile
	if p == nil {
		if a.ProfileError != "" {
			fmt.Fprintf(b, "- CPU profile unavailable: %s\n\n", a.ProfileError)
		} else {
			b.WriteString("- No CPU profile was taken.\n\n")
		}
		return
	}
	fmt.Fprintf(b, "- skiff's CPU profile over %.0f s of the window (%s): %.3f s sampled, %.2f %% of a core",
		p.DurationS, profileFile(p), p.SampledS, p.CPUPercent())
	if p.SampledS <= 0 {
		b.WriteString("; no samples (Go's profiler samples every 10 ms of CPU), so no breakdown.\n\n")
		return
	}
	b.WriteString("; by what each sample's stack runs (the first bucket that matches wins, in the order below the table):\n\n")
	buckets := slices.Clone(p.Buckets)
	slices.SortStableFunc(buckets, func(x, y cpuprof.BucketCPU) int { return cmp.Compare(y.CPUS, x.CPUS) })
	b.WriteString("| bucket | CPU | share of sampled | % of a core | what it is |\n|---|---|---|---|---|\n")
	var order []string
	for _, bk := range p.Buckets {
		order = append(order, bk.Name)
	}
	var named []string
	for _, bk := range buckets {
		if bk.CPUS <= 0 {
			continue
		}
		fmt.Fprintf(b, "| %s | %.0f ms | %.0f %% | %.2f %% | %s |\n", bk.Name, 1000*bk.CPUS, share(bk.CPUS, p.SampledS),
			100*bk.CPUS/p.DurationS, bk.What)
		if len(named) < 3 {
			named = append(named, fmt.Sprintf("%s (%.0f %%)", bk.Name, share(bk.CPUS, p.SampledS)))
		}
	}
	fmt.Fprintf(b, "\nBucket order: %s. The largest: %s.\n\n", strings.Join(order, ", "), strings.Join(named, ", "))
}

// writeProfileTop writes the top functions of a's CPU profile by
// cumulative and by flat CPU; nothing without a profile.
func writeProfileTop(b *strings.Builder, rt string, a *Agent) {
	if a == nil || (a.Profile == nil && a.ProfileError == "") {
		return
	}
	if a.Profile == nil {
		fmt.Fprintf(b, "skiff's CPU profile over the steady window, %s: unavailable: %s\n\n", rt, a.ProfileError)
		return
	}
	p := a.Profile
	fmt.Fprintf(b, "skiff's CPU profile over the steady window, %s (%s, %.0f s, %.3f s sampled)", rt, profileFile(p), p.DurationS, p.SampledS)
	if len(p.Cum) == 0 {
		b.WriteString(": no samples.\n\n")
		return
	}
	b.WriteString(": the top functions by cumulative CPU (it and what it calls) and by flat CPU (itself).\n\n")
	b.WriteString("| # | by cumulative | CPU | by flat | CPU |\n|---|---|---|---|---|\n")
	for i := range min(profileRows, max(len(p.Cum), len(p.Flat))) {
		c, f := "- | -", "- | -"
		if i < len(p.Cum) {
			c = fmt.Sprintf("`%s` | %.0f ms (%.0f %%)", p.Cum[i].Func, 1000*p.Cum[i].CumS, share(p.Cum[i].CumS, p.SampledS))
		}
		if i < len(p.Flat) {
			f = fmt.Sprintf("`%s` | %.0f ms (%.0f %%)", p.Flat[i].Func, 1000*p.Flat[i].FlatS, share(p.Flat[i].FlatS, p.SampledS))
		}
		fmt.Fprintf(b, "| %d | %s | %s |\n", i+1, c, f)
	}
	b.WriteString("\n")
}

// profileFile names the raw profile file for the report.
func profileFile(p *cpuprof.Summary) string {
	if p.File == "" {
		return "not saved"
	}
	return "`" + p.File + "`"
}

// share is part as a percentage of whole (0 when whole is not positive).
func share(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}
