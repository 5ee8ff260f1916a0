package report

import (
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// shimUnder is a shim run that meets every goal beside kubeAPI.
func shimUnder() *Shim {
	return &Shim{Version: "v1.34.4-skiff", ReadyColdS: 0.6, ReadyWarmS: 0.4, Pods: 110, ConfigMaps: 200, SteadyS: 60,
		Running: NewSeries([]float64{0.8, 0.9, 1.0}), Started: NewSeries([]float64{0.7, 0.8, 0.9}),
		ListPods: NewSeries([]float64{0.010, 0.012, 0.014}),
		Shim:     procfs.Window{CPUPercent: 0.5, RSSMeanMB: 70, RSSMaxMB: 75},
		Agent:    &Agent{Pods: 110, AllRunningS: 60, RemoveAllS: 30, Steady: procfs.Window{CPUPercent: 2, RSSMaxMB: 45}}}
}

// kubeAPI is the API scenario's skiff figures against kube-apiserver.
func kubeAPI() *API {
	return &API{Startup: Compare{Skiff: NewSeries([]float64{1.0, 1.1, 1.2})}, Running: Compare{Skiff: NewSeries([]float64{1.1, 1.2, 1.3})},
		ListPods: NewSeries([]float64{0.020, 0.024, 0.030}),
		Density:  &Density{Pods: 110, Skiff: &Agent{AllRunningS: 70, RemoveAllS: 40, Steady: procfs.Window{CPUPercent: 1.9, RSSMaxMB: 46}}}}
}

func TestEvaluateShim(t *testing.T) {
	over := shimUnder()
	over.ReadyColdS, over.ReadyWarmS = 1.3, 1.1
	over.Shim = procfs.Window{CPUPercent: 1.5, RSSMaxMB: 90}
	over.Running, over.ListPods = NewSeries([]float64{2}), NewSeries([]float64{0.05})
	for _, tc := range []struct {
		name string
		shim *Shim
		api  *API
		want []Status
	}{
		{"every goal met", shimUnder(), kubeAPI(), []Status{Met, Met, Met, Met, Met, Met}},
		{"every goal missed", over, kubeAPI(), []Status{NotMet, NotMet, NotMet, NotMet, NotMet, NotMet}},
		{"no kube-apiserver", shimUnder(), nil, []Status{Met, Met, Met, Met, NotRun, NotRun}},
		{"nothing measured", &Shim{}, nil, []Status{Unknown, Unknown, Unknown, Unknown, Unknown, Unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EvaluateShim(tc.shim, tc.api, IssueLimits)
			if len(got) != len(tc.want) {
				t.Fatalf("%d targets, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, tg := range got {
				if tg.Status != tc.want[i] {
					t.Errorf("target %q: %s (%s), want %s", tg.Name, tg.Status, tg.Value, tc.want[i])
				}
			}
		})
	}
}

func TestShimSection(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  *API
		want []string
	}{
		{"beside kube-apiserver", kubeAPI(), []string{
			"### 1.3 Control plane shim, external (issue 17: skiff-apiserver v1.34.4-skiff)",
			"| shim RSS (max), 110 pods + 200 ConfigMaps | < 80.0 MB | 75.0 MB | met |",
			"| shim CPU, 110 pods + 200 ConfigMaps | < 1.00 % of a core | 0.50 % of a core | met |",
			"| shim ready after start, cold | < 1.00 s | 0.60 s | met |",
			"| kubectl get pods (110 pods) median vs kube-apiserver | <= 1.00x kube-apiserver | 0.50x (12.0 ms vs 24.0 ms) | met |",
			"| create -> Running in the API, median (n) | 0.900 s (3) | 1.200 s (3) |",
			"| kubectl get pods, 110 pods, median (n) | 12.0 ms (3) | 24.0 ms (3) |",
			"| ready after start: cold / warm | 0.600 s / 0.400 s | - |",
			"| API server CPU / RSS mean / max (60 s window) | 0.50 % / 70.0 / 75.0 MB | - |",
			"| agent CPU / RSS max | 2.00 % / 45.0 MB | 1.90 % / 46.0 MB |",
			"| 110 pods all running / remove all | 60.0 s / 30.0 s | 70.0 s / 40.0 s |",
		}},
		{"alone", nil, []string{
			"### 1.2 Control plane shim, external",
			"| create -> Running median vs kube-apiserver | <= 1.00x kube-apiserver | - | not run |",
			"| create -> app StartedAt, median (n) | 0.800 s (3) | - |",
			"| 110 pods all running / remove all | 60.0 s / 30.0 s | - |",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := Run{Runtime: RuntimeExternal, API: tc.api, Shim: shimUnder()}
			var b strings.Builder
			if err := Markdown(&b, &Results{Mode: "full", Runs: []Run{run}}, IssueLimits, nil); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}
