package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/cpuprof"
	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// sampleProfile is a 59 s profile of 0.5 s sampled CPU.
func sampleProfile() *cpuprof.Summary {
	return &cpuprof.Summary{File: "2026-03-01-full-managed-steady.pprof", DurationS: 59, SampledS: 0.5,
		Cum:  []cpuprof.Entry{{Func: "runtime.schedule", CumS: 0.2}, {Func: "github.com/skiffnode/skiff/probes.(*worker).run", FlatS: 0.01, CumS: 0.15}},
		Flat: []cpuprof.Entry{{Func: "runtime.futex", FlatS: 0.1, CumS: 0.1}},
		Buckets: []cpuprof.BucketCPU{
			{Name: "GC", What: "gc", CPUS: 0.05}, {Name: "probes", What: "probe workers", CPUS: 0.15},
			{Name: "relist", What: "relist", CPUS: 0}, {Name: "scheduler", What: "wake-ups", CPUS: 0.2},
			{Name: "other", What: "rest", CPUS: 0.1},
		}}
}

func render(t *testing.T, runs ...Run) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Markdown(&buf, &Results{Runs: runs}, IssueLimits, Plots{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func checkContains(t *testing.T, md string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q\n%s", w, md)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Errorf("report contains NaN:\n%s", md)
	}
}

func TestWhyManaged(t *testing.T) {
	run := managedRun()
	run.Density.ProbePeriodS = 10
	run.Density.Skiff.Profile = sampleProfile()
	run.Density.Floor[2].ProbeWindow = &ProbeWindow{Seconds: 20, Execs: 220, CPUSeconds: 0.22}
	md := render(t, run)
	checkContains(t, md, []string{
		"#### Targets missed, managed: why (from this run's measurements)",
		// startup: 0.60 vs 0.50 median, 0.55 vs 0.50 minimum
		"**startup median vs floor**: 1.20x (0.600 s vs 0.500 s) (goal <= 1.10x floor).",
		"skiff minus floor, per pod: +50 ms at the minimum (0.550 s vs 0.500 s), +100 ms at the median, +200 ms at p90 (n = 3 each).",
		"The floor's own samples spread over 0 ms",
		// steady CPU: 1.5 % of 60 s = 0.9 s; 110 pods x 60 s / 10 s = 660 execs
		"skiff used 0.90 s of CPU over the 60 s window (1.50 % of a core). Its pods' exec readiness probes are about 660 ExecSyncs",
		"1.36 ms of skiff's CPU per probe exec",
		// the floor: 220 ms / 220 execs = 1 ms; 11 execs/s x 1 ms = 1.1 % of a core
		"(the probe floor: the harness's own CPU over 20 s, 220 execs): 1.00 ms per exec; at 110 pods that alone is 1.10 % of a core.",
		"Meeting 1.50 % means 0.00 points less",
		"skiff's CPU profile over 59 s of the window (`2026-03-01-full-managed-steady.pprof`): 0.500 s sampled, 0.85 % of a core",
		"| scheduler | 200 ms | 40 % | 0.34 % | wake-ups |\n| probes | 150 ms | 30 % | 0.25 % | probe workers |\n| other | 100 ms | 20 % |",
		"Bucket order: GC, probes, relist, scheduler, other. The largest: scheduler (40 %), probes (30 %), other (20 %).",
		// the profile's top functions in the density section
		"skiff's CPU profile over the steady window, managed (`2026-03-01-full-managed-steady.pprof`, 59 s, 0.500 s sampled)",
		"| 1 | `runtime.schedule` | 200 ms (40 %) | `runtime.futex` | 100 ms (20 %) |",
		"| 2 | `github.com/skiffnode/skiff/probes.(*worker).run` | 150 ms (30 %) | - | - |",
	})
	if strings.Contains(md, "| relist | 0 ms") {
		t.Error("an empty bucket is listed")
	}
	// Met targets get no explanation.
	if strings.Contains(md, "**steady state, 110 pods: RSS (max)**") {
		t.Error("a met target is explained")
	}
}

func TestWhyProfileUnavailable(t *testing.T) {
	run := managedRun()
	run.Density.Skiff.ProfileError = "cpu profile from /x/skiff.sock: connection refused"
	checkContains(t, render(t, run), []string{
		"- CPU profile unavailable: cpu profile from /x/skiff.sock: connection refused",
		"skiff's CPU profile over the steady window, managed: unavailable: cpu profile from /x/skiff.sock: connection refused",
	})
}

// A run that meets every target it measured has no why section.
func TestWhyNothingMissed(t *testing.T) {
	run := externalRun()
	run.Startup.Volumes = nil
	run.Density.Skiff.Steady.RSSMaxMB = 40
	if md := render(t, run); strings.Contains(md, "Targets missed") {
		t.Errorf("why section without a missed target:\n%s", md)
	}
}

func scaleRun(floor10, floor250 float64) Run {
	agent := func(all float64) *Agent { return &Agent{AllRunningS: all, Steady: procfs.Window{CPUPercent: 1}} }
	return Run{Runtime: RuntimeManaged, Scale: []Scale{
		{Pods: 10, Skiff: agent(5), Floor: &Floor{Pods: 10, AllRunningS: floor10}},
		{Pods: 110, Skiff: agent(66)},
		{Pods: 250, Skiff: agent(175), Floor: &Floor{Pods: 250, AllRunningS: floor250}},
	}}
}

func TestWhyScale(t *testing.T) {
	// skiff 500 -> 700 ms per pod (1.40x); the floor 400 -> 600 (1.50x):
	// met, nothing to explain.
	if md := render(t, scaleRun(4, 150)); strings.Contains(md, "**cost per pod growth") {
		t.Errorf("a met growth target explained:\n%s", md)
	}
	// the floor 400 -> 480 (1.20x): skiff 1.40/1.20 = 1.17x more
	md := render(t, scaleRun(4, 120))
	checkContains(t, md, []string{
		"**cost per pod growth, 10 to 250 pods, vs the floor's**: 1.40x (500 to 700 ms per pod; the floor 1.20x) (goal <= 1.00x the floor's growth)",
		"| 250 | 700 ms | ",
		"From 10 to 250 pods skiff's cost per pod grows 1.40x",
		"skiff grows 1.17x more than the floor: its ratio to the floor rises from 1.25x to 1.46x",
	})
}

func TestWhyBurst(t *testing.T) {
	b := sampleBurst() // skiff init2 1 s, oom 2 s, crash 4 s; kubelet 2, 1, 5 s
	md := render(t, Run{Runtime: RuntimeExternal, Burst: b})
	checkContains(t, md, []string{
		"| pod | covers | skiff | kubelet | later by | skiff's start order |",
		"| oom | OOM | 2.000 s | 1.000 s | +1000 ms | 2 of 3 |",
		"skiff's first starts span 1.000 s to 4.000 s (3000 ms, median 2.000 s); the kubelet's 1.000 s to 5.000 s (4000 ms, median 2.000 s).",
		"1 of the 1 late pods are in the later half of skiff's start order.",
	})
	// skiff's starts spread less than the kubelet's here: no start gate claim.
	if strings.Contains(md, "start gate") {
		t.Errorf("start gate named though skiff's starts spread less:\n%s", md)
	}
}

func TestStartOrder(t *testing.T) {
	got := startOrder(&BurstRun{FirstStartS: map[string]float64{"b": 2, "a": 2, "c": 1}})
	if got["c"] != 1 || got["a"] != 2 || got["b"] != 3 {
		t.Errorf("startOrder = %v, want c 1, a 2, b 3 (ties by name)", got)
	}
}

func TestProbeWindowMsPerExec(t *testing.T) {
	if got := (&ProbeWindow{Execs: 4, CPUSeconds: 0.01}).MsPerExec(); got != 2.5 {
		t.Errorf("MsPerExec = %v, want 2.5", got)
	}
	var nilWindow *ProbeWindow
	if !math.IsNaN((&ProbeWindow{CPUSeconds: 1}).MsPerExec()) || !math.IsNaN(nilWindow.MsPerExec()) {
		t.Error("MsPerExec without execs must be NaN")
	}
}

func TestWhyStartupPhases(t *testing.T) {
	run := managedRun()
	run.Startup.Phases = &Phases{Names: []string{"a", "b"},
		Skiff: [][]float64{{0.1, 0.5}, {0.3, 0.5}, {0.2, 0.6}}, // medians 0.2, 0.5
		Floor: [][]float64{{0.1, 0.4}, {0.1, 0.4}},             // medians 0.1, 0.4
	}
	run.Startup.Phases.Add(PhasesFloor, []float64{1}) // wrong length: left out
	var none *Phases
	none.Add(PhasesSkiff, []float64{1, 2}) // nil: nothing, no panic
	checkContains(t, render(t, run), []string{
		"Where the time goes: each pod's path split at the runtime's own timestamps, medians per phase (skiff n = 3, floor n = 2;",
		"| phase | skiff | floor | skiff - floor | kubelet |",
		"| a | 200 ms | 100 ms | +100 ms | - |\n| b | 500 ms | 400 ms | +100 ms | - |",
		"The largest difference of medians is \"a\" (+100 ms).",
	})
	run.Startup.Phases = nil
	checkContains(t, render(t, run), []string{"This run has no per-phase timestamps of these pods."})
}

// A profile without samples says so instead of an empty table.
func TestProfileWithoutSamples(t *testing.T) {
	run := managedRun()
	run.Density.Skiff.Profile = &cpuprof.Summary{File: "p.pprof", DurationS: 4}
	md := render(t, run)
	checkContains(t, md, []string{
		"skiff's CPU profile over 4 s of the window (`p.pprof`): 0.000 s sampled, 0.00 % of a core; no samples",
		"skiff's CPU profile over the steady window, managed (`p.pprof`, 4 s, 0.000 s sampled): no samples.",
	})
	if strings.Contains(md, "| # | by cumulative") {
		t.Error("an empty table of top functions")
	}
}

func TestMsDiff(t *testing.T) {
	for _, tt := range []struct {
		a, b float64
		want string
	}{{0.3, 0.1, "+200 ms"}, {0.1, 0.3, "-200 ms"}, {0.1, 0.1002, "+0 ms"}, {0.0004, 0, "+0 ms"}, {-0.0004, 0, "+0 ms"}} {
		if got := msDiff(tt.a, tt.b); got != tt.want {
			t.Errorf("msDiff(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestWhyDensity: a density target missed gets the table of every floor
// and the kubelet beside skiff, once, and says which start strategy was
// fastest.
func TestWhyDensity(t *testing.T) {
	d := &Density{Pods: 110, SteadyS: 60,
		Skiff:   &Agent{Pods: 110, FirstRunningS: 0.6, AllRunningS: 15.35},
		Kubelet: &Agent{Pods: 110, FirstRunningS: 2.0, AllRunningS: 15.875},
		Floor: []Floor{
			{Pods: 110, Parallelism: 4, FirstRunningS: 0.4, AllRunningS: 15.7},
			{Pods: 110, Parallelism: 0, FirstRunningS: 4.0, AllRunningS: 11.7},
			{Pods: 110, Parallelism: 0, Probes: true, FirstRunningS: 4.6, AllRunningS: 13.088},
		}}
	md := render(t, Run{Runtime: RuntimeExternal, Density: d})
	checkContains(t, md, []string{
		"| skiff | adaptive (its start gate) | 0.600 s | 15.3 s | 1.00x |",
		"| CRI floor | 4 | 0.400 s | 15.7 s | 0.98x |",
		"| CRI floor | unbounded | 4.000 s | 11.7 s | 1.31x |",
		"| CRI floor + probes | unbounded |",
		"| kubelet | all at once | 2.000 s | 15.9 s | 0.97x |",
		"The fastest way to start these pods on this runtime was the floor with unbounded starts in flight (11.7 s). Every start at once was fastest here",
		"the floor took 13.1 s (1.12x its plain run)",
		"- See the density table above.",
	})
	if strings.Contains(md, "The kubelet starts every pod at once") {
		t.Error("the kubelet was slower than skiff here; no line for it")
	}
	if n := strings.Count(md, "| who | starts in flight |"); n != 1 {
		t.Errorf("density table %d times, want once", n)
	}
}
