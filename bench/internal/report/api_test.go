package report

import (
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

func TestEvaluateAPI(t *testing.T) {
	full := &API{StartupPods: 3,
		Startup: Compare{Skiff: NewSeries([]float64{1.1, 1.2, 1.3}), Kubelet: NewSeries([]float64{2.0, 2.1, 2.2})},
		Density: &Density{Pods: 110, Skiff: &Agent{Pods: 110, AllRunningS: 60, Steady: procfs.Window{RSSMaxMB: 48}},
			Kubelet: &Agent{Pods: 110, AllRunningS: 80}}}
	slow := &API{StartupPods: 1, Startup: Compare{Skiff: NewSeries([]float64{3}), Kubelet: NewSeries([]float64{2})},
		Density: &Density{Pods: 110, Skiff: &Agent{AllRunningS: 90, Steady: procfs.Window{RSSMaxMB: 51}}, Kubelet: &Agent{AllRunningS: 80}}}
	noKubelet := &API{StartupPods: 1, Startup: Compare{Skiff: NewSeries([]float64{1})},
		Density: &Density{Pods: 5, Skiff: &Agent{AllRunningS: 2, Steady: procfs.Window{RSSMaxMB: 40}}}}
	for _, tc := range []struct {
		name string
		api  *API
		want []Status
	}{
		{"ahead of the kubelet", full, []Status{Met, Met, Met}},
		{"behind, over 50 MB", slow, []Status{NotMet, NotMet, NotMet}},
		{"no kubelet", noKubelet, []Status{NotRun, NotRun, Met}},
		{"nothing measured", &API{}, []Status{Unknown, Unknown, Unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EvaluateAPI(tc.api, IssueLimits)
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

func TestAPISection(t *testing.T) {
	run := Run{Runtime: RuntimeExternal, API: &API{ControlPlane: "Kubernetes v1.34.4", StartupPods: 3,
		Startup: Compare{Skiff: NewSeries([]float64{1.1, 1.2, 1.3}), Kubelet: NewSeries([]float64{2.0, 2.4, 2.2})},
		Density: &Density{Pods: 110, SteadyS: 60,
			Skiff:   &Agent{Pods: 110, FirstRunningS: 1, AllRunningS: 60, RemoveAllS: 30, Steady: procfs.Window{CPUPercent: 2, RSSMeanMB: 47, RSSMaxMB: 48}},
			Kubelet: &Agent{Pods: 110, FirstRunningS: 9, AllRunningS: 80, RemoveAllS: 40, Steady: procfs.Window{CPUPercent: 9, RSSMeanMB: 140, RSSMaxMB: 150}}}}}
	var b strings.Builder
	if err := Markdown(&b, &Results{Mode: "full", Runs: []Run{run}}, IssueLimits, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"### 1.2 API pods, external (issue 16: a real kube-apiserver Kubernetes v1.34.4)",
		"| API pod startup median vs kubelet | <= 1.00x kubelet | 0.55x (1.200 s vs 2.200 s) | met |",
		"| 110 API pods all running vs kubelet | <= 1.00x kubelet | 0.75x (60.000 s vs 80.000 s) | met |",
		"| skiff | 3 | 1.100 s | 1.200 s |",
		"| skiff | 1.000 s | 60.0 s | 0.75x | 2.00 % | 47.0 / 48.0 MB | 30.0 s |",
		"| kubelet | 9.000 s | 80.0 s | 1.00x | 9.00 % | 140.0 / 150.0 MB | 40.0 s |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
