package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// managedRun is a managed-runtime run where skiff meets some targets and
// misses others.
func managedRun() Run {
	return Run{
		Runtime: RuntimeManaged, Containerd: "containerd 1.6.20, managed by skiff",
		Startup: &Startup{Pods: 3, Compare: Compare{
			Skiff: NewSeries([]float64{0.55, 0.60, 0.70}), // median 0.60, p90 0.70
			Floor: NewSeries([]float64{0.50, 0.50, 0.50}), // median 0.50, p90 0.50
		}, Volumes: &Compare{
			Skiff: NewSeries([]float64{0.55, 0.56, 0.65}), // median 0.56, p90 0.65
			Floor: NewSeries([]float64{0.52, 0.52, 0.54}), // median 0.52, p90 0.54
		}},
		Density: &Density{Pods: 110, SteadyS: 60,
			Skiff: &Agent{Pods: 110, FirstRunningS: 0.4, AllRunningS: 26, RemoveAllS: 20,
				Steady: procfs.Window{Seconds: 60, CPUPercent: 1.5, RSSMeanMB: 40, RSSMaxMB: 42}},
			Floor: []Floor{
				{Pods: 110, Parallelism: 2, FirstRunningS: 0.4, AllRunningS: 25, RemoveAllS: 15},
				{Pods: 110, Parallelism: 0, FirstRunningS: 16.7, AllRunningS: 24, RemoveAllS: 14},
				{Pods: 110, Parallelism: 0, Probes: true, ProbeExecs: 330, ProbeFails: 1, FirstRunningS: 17, AllRunningS: 32.5, RemoveAllS: 15},
			}},
		Reaction: &Reaction{LivenessPeriodS: 1, Sigterm: Compare{
			Skiff: NewSeries([]float64{0.15, 0.2, 0.25}),
			Floor: NewSeries([]float64{0.01, 0.01, 0.02}),
		}},
		Scale: []Scale{
			{Pods: 10, Skiff: &Agent{AllRunningS: 3, Steady: procfs.Window{CPUPercent: 0.2, RSSMaxMB: 20}}, Floor: &Floor{AllRunningS: 2.5}},
			{Pods: 50, Skiff: &Agent{AllRunningS: 12, Steady: procfs.Window{CPUPercent: 0.8, RSSMaxMB: 30}}},
		},
	}
}

// externalRun is an external-runtime run (startup and density only) with
// the kubelet beside skiff.
func externalRun() Run {
	return Run{
		Runtime: RuntimeExternal, Containerd: "containerd 1.6.20 at /usr/bin/containerd, CNI bridge cni-ext0",
		Startup: &Startup{Pods: 3, Compare: Compare{
			Skiff:   NewSeries([]float64{0.50, 0.52, 0.54}), // median 0.52
			Floor:   NewSeries([]float64{0.50, 0.50, 0.50}),
			Kubelet: NewSeries([]float64{1.5, 1.6, 1.7}),
		}, Volumes: &Compare{
			Skiff: NewSeries([]float64{0.58, 0.60, 0.61}), // median 0.60
			Floor: NewSeries([]float64{0.50, 0.50, 0.51}), // median 0.50
		}},
		Density: &Density{Pods: 110, SteadyS: 60,
			Skiff: &Agent{Pods: 110, FirstRunningS: 2.5, AllRunningS: 80, RemoveAllS: 30,
				Steady: procfs.Window{Seconds: 60, CPUPercent: 1.2, RSSMeanMB: 41, RSSMaxMB: 46}},
			Kubelet: &Agent{Pods: 110, FirstRunningS: 16, AllRunningS: 100, RemoveAllS: 60,
				Steady: procfs.Window{Seconds: 60, CPUPercent: 8, RSSMeanMB: 130, RSSMaxMB: 141}},
			Floor: []Floor{{Pods: 110, Parallelism: 8, FirstRunningS: 0.5, AllRunningS: 70, RemoveAllS: 40},
				{Pods: 110, Parallelism: 8, Probes: true, ProbeExecs: 800, FirstRunningS: 0.6, AllRunningS: 75, RemoveAllS: 41}}},
	}
}

// sample returns results of both runtimes.
func sample() *Results {
	return &Results{
		Mode: "full", Date: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), DurationS: 900,
		Machine:  Machine{CPUModel: "AMD EPYC", Cores: 2, Kernel: "6.1.0", CgroupMode: "v1 (hybrid)", MemoryGB: 24},
		Versions: Versions{Skiff: "v0.1-3-gabc", Containerd: "1.6.20", Runc: "1.1.5"},
		Runs:     []Run{managedRun(), externalRun()},
	}
}

// targets evaluates run and indexes the targets by name.
func targets(t *testing.T, run Run) map[string]Target {
	t.Helper()
	got := map[string]Target{}
	for _, tg := range Evaluate(run, IssueLimits) {
		if _, dup := got[tg.Name]; dup {
			t.Fatalf("two targets named %q", tg.Name)
		}
		got[tg.Name] = tg
	}
	return got
}

type wantTarget struct {
	name      string
	want      Status
	valuePart string
}

func checkTargets(t *testing.T, got map[string]Target, tests []wantTarget) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, ok := got[tt.name]
			if !ok {
				t.Fatalf("no target %q in %v", tt.name, got)
			}
			if tg.Status != tt.want || !strings.Contains(tg.Value, tt.valuePart) {
				t.Errorf("%s = %+v, want status %q and value containing %q", tt.name, tg, tt.want, tt.valuePart)
			}
		})
	}
	if len(got) != len(tests) {
		t.Errorf("got %d targets, want %d: %v", len(got), len(tests), got)
	}
}

func TestEvaluateManaged(t *testing.T) {
	checkTargets(t, targets(t, managedRun()), []wantTarget{
		{"startup median vs floor", NotMet, "1.20x"},                                // 0.60/0.50 > 1.05
		{"startup with volumes median vs floor", Met, "1.08x (0.560 s vs 0.520 s)"}, // <= 1.15
		{"110 pods all running vs kubelet", NotRun, "-"},                            // no kubelet column
		{"110 pods all running vs floor + probes", Met, "0.80x"},                    // 26/32.5
		{"110 pods: first running", Met, "0.40 s"},                                  // < 1 s
		{"steady state, 110 pods: CPU", NotMet, "1.50 % of a core"},                 // not < 1.5 %
		{"steady state, 110 pods: RSS (max)", Met, "42.0 MB"},                       // < 45 MB
		{"cost per pod growth across the scale curve vs the floor's", Unknown, "-"}, // the floor at 10 pods only
	})
}

// The external runtime has no first-pod or scale targets (managed only),
// and compares with the kubelet when it ran.
func TestEvaluateExternal(t *testing.T) {
	checkTargets(t, targets(t, externalRun()), []wantTarget{
		{"startup median vs floor", Met, "1.04x"},                                 // 0.52/0.50
		{"startup with volumes median vs floor", NotMet, "1.20x"},                 // 0.60/0.50 > 1.15
		{"110 pods all running vs kubelet", Met, "0.80x (80.000 s vs 100.000 s)"}, // at least 10% sooner
		{"110 pods all running vs floor + probes", Met, "1.07x"},                  // 80/75
		{"steady state, 110 pods: CPU", Met, "1.20 % of a core"},
		{"steady state, 110 pods: RSS (max)", NotMet, "46.0 MB"},
	})
}

func TestEvaluateMissingFiguresAreUnknown(t *testing.T) {
	for _, rt := range []string{RuntimeManaged, RuntimeExternal} {
		for _, tg := range Evaluate(Run{Runtime: rt}, IssueLimits) {
			if tg.Status != Unknown || tg.Value != "-" || strings.Contains(tg.Name, "0 pods") {
				t.Errorf("%s: %s = %+v, want not measured (and no pod count)", rt, tg.Name, tg)
			}
		}
	}
}

func TestEvaluateBoundaries(t *testing.T) {
	r := externalRun()
	r.Startup.Skiff = NewSeries([]float64{0.525, 0.525, 0.525}) // exactly 1.05x
	r.Startup.Volumes.Skiff = NewSeries([]float64{0.575})       // exactly 1.15x
	r.Density.Skiff.AllRunningS = 90                            // exactly 0.9x the kubelet's 100 s
	r.Density.Skiff.Steady.RSSMaxMB = 45                        // exactly the limit: "under" fails
	got := targets(t, r)
	for name, want := range map[string]Status{
		"startup median vs floor":              Met,
		"startup with volumes median vs floor": Met,
		"110 pods all running vs kubelet":      Met,
		"steady state, 110 pods: RSS (max)":    NotMet,
	} {
		if got[name].Status != want {
			t.Errorf("%s at its limit: %+v, want %s", name, got[name], want)
		}
	}
	r.Density.Skiff.AllRunningS = 90.5 // only 9.5% sooner
	if tg := targets(t, r)["110 pods all running vs kubelet"]; tg.Status != NotMet {
		t.Errorf("9.5%% sooner than the kubelet: %+v, want not met", tg)
	}
}

// TestEvaluateStartupVolumesUnknown: the plain startup measured without
// the volumes variant (or without its floor) leaves that target not
// measured.
func TestEvaluateStartupVolumesUnknown(t *testing.T) {
	r := managedRun()
	r.Startup.Volumes = nil
	if tg := targets(t, r)["startup with volumes median vs floor"]; tg.Status != Unknown || tg.Value != "-" || tg.Goal != "<= 1.15x floor" {
		t.Errorf("without the variant: %+v, want not measured", tg)
	}
	r = managedRun()
	r.Startup.Volumes.Floor = nil
	if tg := targets(t, r)["startup with volumes median vs floor"]; tg.Status != Unknown {
		t.Errorf("without its floor: %+v, want not measured", tg)
	}
}

func TestFlatTarget(t *testing.T) {
	agent := func(all float64) *Agent { return &Agent{AllRunningS: all} }
	floor := func(all float64) *Floor { return &Floor{AllRunningS: all} }
	const name = "cost per pod growth, 10 to 250 pods, vs the floor's"
	tests := []struct {
		name   string
		sc     []Scale
		want   Status
		target string
	}{
		{"one point", []Scale{{Pods: 10, Skiff: agent(5), Floor: floor(3)}}, Unknown, "cost per pod growth across the scale curve vs the floor's"},
		{"no floor at one end", []Scale{{Pods: 10, Skiff: agent(5), Floor: floor(3)}, {Pods: 250, Skiff: agent(150)}}, Unknown, "cost per pod growth across the scale curve vs the floor's"},
		// skiff 0.5 -> 0.6 s per pod (1.2x), the floor 0.3 -> 0.4 (1.33x).
		{"grows less", []Scale{{Pods: 10, Skiff: agent(5), Floor: floor(3)}, {Pods: 50, Skiff: agent(40)}, {Pods: 250, Skiff: agent(150), Floor: floor(100)}}, Met, name},
		{"grows as much", []Scale{{Pods: 250, Skiff: agent(150), Floor: floor(75)}, {Pods: 10, Skiff: agent(5), Floor: floor(2.5)}}, Met, name},
		// skiff 1.2x, the floor flat.
		{"grows more", []Scale{{Pods: 10, Skiff: agent(5), Floor: floor(3)}, {Pods: 250, Skiff: agent(150), Floor: floor(75)}}, NotMet, name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := flatTarget(tt.sc, IssueLimits.ScaleFlatRatio)
			if got.Status != tt.want || got.Name != tt.target {
				t.Errorf("flatTarget = %+v, want %s named %q", got, tt.want, tt.target)
			}
		})
	}
}

func TestFootprintTarget(t *testing.T) {
	window := func(pss float64) *NodeFootprint {
		f := &NodeFootprint{Pods: 110}
		f.Total.PSSMaxMB = pss
		return f
	}
	tests := []struct {
		name string
		fp   *Footprint
		want Status
	}{
		{"none", nil, Unknown},
		{"no kubelet", &Footprint{Loaded: window(300)}, NotRun},
		{"30 % below", &Footprint{Loaded: window(280), Kubelet: window(400)}, Met},
		{"20 % below", &Footprint{Loaded: window(320), Kubelet: window(400)}, NotMet},
		{"no PSS (old results)", &Footprint{Loaded: window(0), Kubelet: window(400)}, Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := footprintTarget(tt.fp, IssueLimits.FootprintKubeletRatio); got.Status != tt.want {
				t.Errorf("footprintTarget = %+v, want %s", got, tt.want)
			}
		})
	}
}

func TestBestFloor(t *testing.T) {
	if _, ok := BestFloor(nil); ok {
		t.Error("BestFloor(nil): want !ok")
	}
	b, ok := BestFloor(managedRun().Density.Floor)
	if !ok || b.Parallelism != 0 || b.AllRunningS != 24 || b.Probes {
		t.Errorf("BestFloor = %+v, %v", b, ok)
	}
	// A probe floor is never the best plain floor, however fast.
	fs := []Floor{{Parallelism: 2, AllRunningS: 5}, {Parallelism: 2, Probes: true, AllRunningS: 1}}
	if b, ok := BestFloor(fs); !ok || b.Probes || b.AllRunningS != 5 {
		t.Errorf("BestFloor with a faster probe floor = %+v, %v", b, ok)
	}
	if p, ok := ProbeFloor(fs); !ok || !p.Probes || p.AllRunningS != 1 {
		t.Errorf("ProbeFloor = %+v, %v", p, ok)
	}
	if _, ok := ProbeFloor(fs[:1]); ok {
		t.Error("ProbeFloor without one: want !ok")
	}
}

func TestMarkdown(t *testing.T) {
	var buf bytes.Buffer
	plots := Plots{RuntimeManaged: {Startup: "s.svg", Scale: "c.svg"}, RuntimeExternal: {Startup: "s-ext.svg"}}
	if err := Markdown(&buf, sample(), IssueLimits, plots); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"# skiff benchmark (full mode), 2026-03-01 12:00 UTC",
		"| CPU | AMD EPYC, 2 cores |",
		"| cgroups | v1 (hybrid) |",
		"| kubelet | not run",
		"## The runtimes at a glance",
		"| managed | 0.600 s / 0.500 s | 110 | 26.0 s | 24.0 s (unbounded) | - | 1.50 % / 42.0 MB |",
		"| external | 0.520 s / 0.500 s | 110 | 80.0 s | 70.0 s (8 workers) | 100.0 s | 1.20 % / 46.0 MB |",
		"## 1. Runtime: managed containerd (skiff starts it)\n\ncontainerd 1.6.20, managed by skiff\n",
		"### 1.1 Targets, managed (issue 13; goals, not assertions)",
		"| startup median vs floor | <= 1.10x floor | 1.20x (0.600 s vs 0.500 s) | not met |",
		"| 110 pods all running vs kubelet | <= 0.90x kubelet | - | not run |",
		"### 1.2 Startup latency, managed (3 pods",
		"| skiff | 3 | 0.550 s | 0.600 s | 0.700 s | 0.700 s | 1.20x | 1.40x |",
		"| CRI floor | 3 | 0.500 s | 0.500 s | 0.500 s | 0.500 s | 1.00x | 1.00x |",
		"| startup with volumes median vs floor | <= 1.15x floor | 1.08x (0.560 s vs 0.520 s) | met |",
		"The kubelet does not run this pod",
		"| plain: init + app | 3 | 0.600 s | 0.500 s | 1.20x | 1.40x | - |",
		"| with emptyDir, configMap, downwardAPI | 3 | 0.560 s | 0.520 s | 1.08x | 1.20x | - (not run) |",
		"| plain: init + app | 3 | 0.520 s | 0.500 s | 1.04x | 1.08x | 1.600 s |",
		"| with emptyDir, configMap, downwardAPI | 3 | 0.600 s | 0.500 s | 1.20x | 1.20x | - (not run) |",
		"### 1.3 Density, managed (110 pods",
		"| skiff | 0.400 s | 26.0 s | 1.08x | 0.80x | 1.50 % | 40.0 / 42.0 MB | 20.0 s |",
		"| CRI floor, unbounded (best) | 16.7 s | 24.0 s | 1.00x | 0.74x | - | - | 14.0 s |",
		"| CRI floor, 2 workers | 0.400 s | 25.0 s | 1.04x | 0.77x |",
		"| CRI floor + probes, unbounded (330 execs, 1 failed) | 17.0 s | 32.5 s | 1.35x | 1.00x | - | - | 15.0 s |",
		"### 1.4 Reaction, managed",
		"| manifest deleted -> SIGTERM in the container | 0.200 s (0.150 s-0.250 s, n=3) | - | 0.010 s (0.010 s-0.020 s, n=3) | 20.00x |",
		"### 1.5 Scale curve, managed",
		"| 10 | 3.000 s | 300 ms | 2.500 s | 1.20x | 0.20 % | 2.00 % | 20.0 MB |",
		"| 50 | 12.0 s | 240 ms | - | - | 0.80 % |",
		"![startup latency distribution, managed](s.svg)",
		"![scale curve, managed](c.svg)",
		"## 2. Runtime: external containerd (plain CRI config, as a kubelet user has it)\n\ncontainerd 1.6.20 at /usr/bin/containerd, CNI bridge cni-ext0\n",
		"### 2.1 Targets, external",
		"| 110 pods all running vs kubelet | <= 0.90x kubelet | 0.80x (80.000 s vs 100.000 s) | met |",
		"### 2.2 Startup latency, external (3 pods",
		"| kubelet | 3 | 1.500 s | 1.600 s |",
		"### 2.3 Density, external (110 pods",
		"| kubelet | 16.0 s | 100.0 s | 1.43x | 1.33x | 8.00 % | 130.0 / 141.0 MB | 60.0 s |",
		"| CRI floor, 8 workers (best) | 0.500 s | 70.0 s | 1.00x |",
		"![startup latency distribution, external](s-ext.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q\n%s", want, md)
		}
	}
	// The external run has neither reaction nor scale sections, nor the
	// managed-only targets.
	ext := md[strings.Index(md, "## 2. Runtime"):]
	for _, absent := range []string{"Reaction", "Scale curve", "pods: first running", "cost per pod growth", "NaN"} {
		if strings.Contains(ext, absent) {
			t.Errorf("external section contains %q:\n%s", absent, ext)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Errorf("report contains NaN:\n%s", md)
	}
}

// One runtime only (-runtimes managed): no comparison table.
func TestMarkdownOneRuntime(t *testing.T) {
	r := sample()
	r.Runs = r.Runs[:1]
	var buf bytes.Buffer
	if err := Markdown(&buf, r, IssueLimits, nil); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if strings.Contains(md, "at a glance") || strings.Contains(md, "## 2. Runtime") || !strings.Contains(md, "## 1. Runtime: managed") {
		t.Errorf("one-runtime report:\n%s", md)
	}
	if strings.Contains(md, "![") {
		t.Errorf("report links plots it was not given:\n%s", md)
	}
}

func TestResultsJSONRoundTrip(t *testing.T) {
	data, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != 2 || back.Runs[0].Density.Skiff.Steady.CPUPercent != 1.5 || back.Runs[0].Startup.Skiff.Summary.P90 != 0.7 ||
		back.Runs[1].Runtime != RuntimeExternal || back.Runs[1].Density.Kubelet.AllRunningS != 100 {
		t.Errorf("round trip lost data: %s", data)
	}
	if v := back.Runs[0].Startup.Volumes; v == nil || v.Skiff.Summary.Median != 0.56 || v.Floor.Summary.N != 3 ||
		!bytes.Contains(data, []byte(`"volumes":{"skiff":{"samples_s":[0.55,0.56,0.65]`)) {
		t.Errorf("startup with volumes lost or misnamed: %s", data)
	}
	if NewSeries(nil) != nil {
		t.Error("NewSeries(nil) must be nil: a NaN summary cannot be marshalled")
	}
}

func TestPlotsWritePlots(t *testing.T) {
	dir := t.TempDir()
	r := managedRun()
	sp, err := StartupPlot(r.Startup)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePlots(filepath.Join(dir, "startup.svg"), 5*vg.Inch, 3.5*vg.Inch, sp); err != nil {
		t.Fatal(err)
	}
	scale, err := ScalePlots(r.Scale)
	if err != nil {
		t.Fatal(err)
	}
	if len(scale) != 3 {
		t.Fatalf("ScalePlots: %d panels, want 3", len(scale))
	}
	if err := WritePlots(filepath.Join(dir, "scale.svg"), 4*vg.Inch, 3.5*vg.Inch, scale...); err != nil {
		t.Fatal(err)
	}
	if err := WritePlots(filepath.Join(dir, "scale.png"), 4*vg.Inch, 3.5*vg.Inch, scale...); err != nil {
		t.Fatal(err)
	}
	if png, err := os.ReadFile(filepath.Join(dir, "scale.png")); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("scale.png is not a PNG (err %v)", err)
	}
	for _, f := range []string{"startup.svg", "scale.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("skiff")) {
			t.Errorf("%s is not an SVG naming skiff (%d bytes)", f, len(data))
		}
	}
}

func TestCDF(t *testing.T) {
	xy := cdf([]float64{2, 1})
	want := []float64{1, 0, 1, 0.5, 2, 0.5, 2, 1}
	for i, p := range xy {
		if p.X != want[2*i] || p.Y != want[2*i+1] {
			t.Fatalf("cdf = %v, want pairs %v", xy, want)
		}
	}
}

// TestMachineVersions: with skiff's own runtime beside it, the machine
// table names both runtimes' binaries; without, the PATH ones as before.
func TestMachineVersions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       Versions
		want    []string
		notWant string
	}{
		{"bundled", Versions{Containerd: "1.6.20", Runc: "1.1.5", ManagedContainerd: "v2.4.2", ManagedRunc: "1.5.3"},
			[]string{"| containerd, managed (skiff's own) | v2.4.2 |", "| runc, managed (skiff's own) | 1.5.3 |", "| containerd, external (PATH) | 1.6.20 |", "| runc, external (PATH) | 1.1.5 |"},
			"| containerd | 1.6.20 |"},
		{"PATH only", Versions{Containerd: "1.6.20", Runc: "1.1.5"}, []string{"| containerd | 1.6.20 |", "| runc | 1.1.5 |"}, "managed (skiff's own)"},
	} {
		var b strings.Builder
		writeMachine(&b, &Results{Versions: tc.v})
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, b.String())
			}
		}
		if strings.Contains(b.String(), tc.notWant) {
			t.Errorf("%s: %q in\n%s", tc.name, tc.notWant, b.String())
		}
	}
}
