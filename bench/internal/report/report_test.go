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

// sample returns results where skiff meets some targets and misses others.
func sample() *Results {
	return &Results{
		Mode: "full", Date: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), DurationS: 900,
		Machine:  Machine{CPUModel: "AMD EPYC", Cores: 2, Kernel: "6.1.0", CgroupMode: "v1 (hybrid)", MemoryGB: 24},
		Versions: Versions{Skiff: "v0.1-3-gabc", Containerd: "1.6.20", Runc: "1.1.5"},
		Startup: &Startup{Pods: 3, Compare: Compare{
			Skiff: NewSeries([]float64{0.55, 0.60, 0.70}), // median 0.60, p90 0.70
			Floor: NewSeries([]float64{0.50, 0.50, 0.50}), // median 0.50, p90 0.50
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

func TestEvaluate(t *testing.T) {
	got := map[string]Target{}
	for _, tg := range Evaluate(sample(), IssueLimits) {
		got[tg.Name] = tg
	}
	tests := []struct {
		name      string
		want      Status
		valuePart string
	}{
		{"startup median", NotMet, "1.20x"},                        // 0.60/0.50 > 1.15
		{"startup p90", NotMet, "1.40x"},                           // 0.70/0.50 > 1.3
		{"110 pods all running vs best floor", Met, "1.08x"},       // 26/24 (best is unbounded)
		{"110 pods: first running", Met, "0.40 s"},                 // < 1 s
		{"steady state, 110 pods: CPU", Met, "1.50 % of a core"},   // < 2 %
		{"steady state, 110 pods: RSS (max)", Met, "42.0 MB"},      // < 50 MB
		{"deleted manifest -> SIGTERM (median)", NotMet, "200 ms"}, // 200 ms >= 100 ms
	}
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
		t.Errorf("got %d targets, want %d", len(got), len(tests))
	}
}

func TestEvaluateMissingFiguresAreUnknown(t *testing.T) {
	for _, tg := range Evaluate(&Results{}, IssueLimits) {
		if tg.Status != Unknown || tg.Value != "-" {
			t.Errorf("%s = %+v, want not measured", tg.Name, tg)
		}
	}
}

func TestEvaluateBoundaries(t *testing.T) {
	r := sample()
	r.Startup.Skiff = NewSeries([]float64{0.575, 0.575, 0.575}) // exactly 1.15x
	r.Density.Skiff.Steady.CPUPercent = 2                       // exactly the limit: "under" fails
	for _, tg := range Evaluate(r, IssueLimits) {
		switch tg.Name {
		case "startup median":
			if tg.Status != Met {
				t.Errorf("ratio equal to the limit: %+v, want met", tg)
			}
		case "steady state, 110 pods: CPU":
			if tg.Status != NotMet {
				t.Errorf("CPU equal to the limit: %+v, want not met", tg)
			}
		}
	}
}

func TestBestFloor(t *testing.T) {
	if _, ok := BestFloor(nil); ok {
		t.Error("BestFloor(nil): want !ok")
	}
	b, ok := BestFloor(sample().Density.Floor)
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
	if err := Markdown(&buf, sample(), IssueLimits, Plots{Startup: "s.svg", Scale: "c.svg"}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"# skiff benchmark (full mode), 2026-03-01 12:00 UTC",
		"| CPU | AMD EPYC, 2 cores |",
		"| cgroups | v1 (hybrid) |",
		"| kubelet | not run",
		"| startup median | <= 1.15x floor | 1.20x (0.600 s vs 0.500 s) | not met |",
		"| skiff | 3 | 0.550 s | 0.600 s | 0.700 s | 0.700 s | 1.20x | 1.40x |",
		"| CRI floor | 3 | 0.500 s | 0.500 s | 0.500 s | 0.500 s | 1.00x | 1.00x |",
		"| skiff | 0.400 s | 26.0 s | 1.08x | 0.80x | 1.50 % | 40.0 / 42.0 MB | 20.0 s |",
		"| CRI floor, unbounded (best) | 16.7 s | 24.0 s | 1.00x | 0.74x | - | - | 14.0 s |",
		"| CRI floor, 2 workers | 0.400 s | 25.0 s | 1.04x | 0.77x |",
		"| CRI floor + probes, unbounded (330 execs, 1 failed) | 17.0 s | 32.5 s | 1.35x | 1.00x | - | - | 15.0 s |",
		"| manifest deleted -> SIGTERM in the container | 0.200 s (0.150 s-0.250 s, n=3) | - | 0.010 s (0.010 s-0.020 s, n=3) | 20.00x |",
		"| 10 | 3.000 s | 300 ms | 2.500 s | 1.20x | 0.20 % | 2.00 % | 20.0 MB |",
		"| 50 | 12.0 s | 240 ms | - | - | 0.80 % |",
		"![startup latency distribution](s.svg)",
		"![scale curve](c.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Errorf("report contains NaN:\n%s", md)
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
	if back.Density.Skiff.Steady.CPUPercent != 1.5 || back.Startup.Skiff.Summary.P90 != 0.7 {
		t.Errorf("round trip lost data: %s", data)
	}
	if NewSeries(nil) != nil {
		t.Error("NewSeries(nil) must be nil: a NaN summary cannot be marshalled")
	}
}

func TestPlotsWritePlots(t *testing.T) {
	dir := t.TempDir()
	r := sample()
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
