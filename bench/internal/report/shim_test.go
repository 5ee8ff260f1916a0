package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// shimUnder is a shim run that meets every goal beside kubeAPI.
func shimUnder() *Shim {
	return &Shim{Version: "v1.34.4-skiff", ReadyColdS: 0.6, ReadyWarmS: 0.4, Pods: 110, Services: 50, ConfigMaps: 200, SteadyS: 60,
		ServiceProxy: true,
		Running:      NewSeries([]float64{0.8, 0.9, 1.0}), Started: NewSeries([]float64{0.7, 0.8, 0.9}),
		ListPods: NewSeries([]float64{0.010, 0.012, 0.014}),
		Shim:     procfs.Window{CPUPercent: 0.5, RSSMeanMB: 70, RSSMaxMB: 75},
		Agent:    &Agent{Pods: 110, AllRunningS: 60, RemoveAllS: 30, Steady: procfs.Window{CPUPercent: 2, RSSMaxMB: 45}},
		Idle:     idleNode(30, 70, 40)}
}

// idleNode is a whole node at rest with the agent's, the API server's and
// the containerd's RSS (MB; PSS 1 MB less each) and CPU 0.1, 0.5 and
// 0.2 %, its total their sums (the maxima at the same sample).
func idleNode(agent, api, cd float64) *ShimIdle {
	a := procfs.Window{Seconds: 10, CPUPercent: 0.1, RSSMeanMB: agent, RSSMaxMB: agent, PSSMaxMB: agent - 1}
	c := procfs.Window{Seconds: 10, CPUPercent: 0.2, RSSMeanMB: cd, RSSMaxMB: cd, PSSMaxMB: cd - 1}
	return &ShimIdle{
		Node: procfs.NodeWindow{Seconds: 10, Agent: a, Containerd: c,
			Total: procfs.Window{Seconds: 10, CPUPercent: 0.3, RSSMaxMB: agent + cd, PSSMaxMB: agent + cd - 2}},
		APIServer: procfs.Window{Seconds: 10, CPUPercent: 0.5, RSSMeanMB: api, RSSMaxMB: api, PSSMaxMB: api - 1},
		Total:     procfs.Window{Seconds: 10, CPUPercent: 0.8, RSSMeanMB: agent + api + cd, RSSMaxMB: agent + api + cd, PSSMaxMB: agent + api + cd - 3},
	}
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
	over.Shim = procfs.Window{CPUPercent: 1.5, RSSMaxMB: 130}
	over.Running, over.ListPods = NewSeries([]float64{2}), NewSeries([]float64{0.05})
	over.Idle = idleNode(40, 130, 50)
	// Over issue 17's 80 MB, under issue 36's 120 MB.
	between := shimUnder()
	between.Shim.RSSMaxMB = 100
	noIdle := shimUnder()
	noIdle.Idle, noIdle.IdleError = nil, "containerd: no such process"
	for _, tc := range []struct {
		name string
		shim *Shim
		api  *API
		// API server RSS (issue 36), shim RSS (issue 17), CPU, ready
		// cold and warm, LIST, round trip, whole node idle.
		want []Status
	}{
		{"every goal met", shimUnder(), kubeAPI(), []Status{Met, Met, Met, Met, Met, Met, Met, Met}},
		{"every goal missed", over, kubeAPI(), []Status{NotMet, NotMet, NotMet, NotMet, NotMet, NotMet, NotMet, NotMet}},
		{"issue 36's RSS met, issue 17's not", between, kubeAPI(), []Status{Met, NotMet, Met, Met, Met, Met, Met, Met}},
		{"idle not measured", noIdle, kubeAPI(), []Status{Met, Met, Met, Met, Met, Met, Met, Unknown}},
		{"no kube-apiserver", shimUnder(), nil, []Status{Met, Met, Met, Met, Met, NotRun, NotRun, Met}},
		{"nothing measured", &Shim{}, nil, []Status{Unknown, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown}},
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

func TestShimTargetNames(t *testing.T) {
	old := shimUnder() // results from before issue 36's goals
	old.Services, old.ServiceProxy, old.Idle = 0, false, nil
	for _, tc := range []struct {
		name string
		shim *Shim
		want map[int][2]string // target index -> name, value
	}{
		{"with Services, proxy and DNS", shimUnder(), map[int][2]string{
			0: {"API server RSS (max), 110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on (issue 36)", "75.0 MB"},
			1: {"shim RSS (max), 110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on (issue 17, set without Services, proxy or DNS)", "75.0 MB"},
			7: {"whole node with --control-plane idle (agent + API server + runtime), RSS (max)",
				"140 MB (max of each: agent 30.0, API server 70.0, runtime 40.0; PSS 137.0 MB)"},
		}},
		{"older results", old, map[int][2]string{
			0: {"API server RSS (max), 110 pods + 0 Services + 200 ConfigMaps (issue 36)", "75.0 MB"},
			7: {"whole node with --control-plane idle (agent + API server + runtime), RSS (max)", "-"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EvaluateShim(tc.shim, kubeAPI(), IssueLimits)
			for i, want := range tc.want {
				if got[i].Name != want[0] || got[i].Value != want[1] {
					t.Errorf("target %d: %q = %q, want %q = %q", i, got[i].Name, got[i].Value, want[0], want[1])
				}
			}
		})
	}
}

func TestShimSection(t *testing.T) {
	old := shimUnder() // results from before issue 36's goals
	old.Services, old.ServiceProxy, old.Idle = 0, false, nil
	failed := shimUnder()
	failed.Idle, failed.IdleError = nil, "skiff-apiserver: read process 42 stat: no such file"
	for _, tc := range []struct {
		name    string
		shim    *Shim
		api     *API
		want    []string
		notWant []string
	}{
		{"beside kube-apiserver", shimUnder(), kubeAPI(), []string{
			"### 1.3 Control plane shim, external (issues 17, 36: skiff-apiserver v1.34.4-skiff)",
			"with its service proxy (kube-proxy's nftables proxier) and cluster DNS in its process, and 50 ClusterIP Services",
			"kube-apiserver runs without kube-proxy or CoreDNS and with no Services of the harness",
			"| API server RSS (max), 110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on (issue 36) | < 120 MB | 75.0 MB | met |",
			"| shim RSS (max), 110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on (issue 17, set without Services, proxy or DNS) | < 80.0 MB | 75.0 MB | met |",
			"| shim CPU, 110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on | < 1.00 % of a core | 0.50 % of a core | met |",
			"| shim ready after start, cold | < 1.00 s | 0.60 s | met |",
			"| kubectl get pods (110 pods) median vs kube-apiserver | <= 1.00x kube-apiserver | 0.50x (12.0 ms vs 24.0 ms) | met |",
			"| whole node with --control-plane idle (agent + API server + runtime), RSS (max) | < 200 MB | 140 MB (max of each: agent 30.0, API server 70.0, runtime 40.0; PSS 137.0 MB) | met |",
			"| create -> Running in the API, median (n) | 0.900 s (3) | 1.200 s (3) |",
			"| kubectl get pods, 110 pods, median (n) | 12.0 ms (3) | 24.0 ms (3) |",
			"| ready after start: cold / warm | 0.600 s / 0.400 s | - |",
			"| whole node idle (10 s window), PSS (RSS) max: agent / API server / runtime (containerd, 0 shims, 0 pause) / total | 29.0 (30.0) MB / 69.0 (70.0) MB / 39.0 (40.0) MB / 137.0 (140.0) MB | - |",
			"| whole node idle, CPU: agent / API server / runtime / total | 0.10 % / 0.50 % / 0.20 % / 0.80 % | - |",
			"| API server CPU / RSS mean / max (60 s window, 110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on) | 0.50 % / 70.0 / 75.0 MB | - |",
			"| agent CPU / RSS max | 2.00 % / 45.0 MB | 1.90 % / 46.0 MB |",
			"| 110 pods all running / remove all | 60.0 s / 30.0 s | 70.0 s / 40.0 s |",
		}, []string{"unavailable"}},
		{"alone", shimUnder(), nil, []string{
			"### 1.2 Control plane shim, external",
			"| create -> Running median vs kube-apiserver | <= 1.00x kube-apiserver | - | not run |",
			"| create -> app StartedAt, median (n) | 0.800 s (3) | - |",
			"| 110 pods all running / remove all | 60.0 s / 30.0 s | - |",
		}, nil},
		{"older results", old, kubeAPI(), []string{
			"| API server RSS (max), 110 pods + 0 Services + 200 ConfigMaps (issue 36) | < 120 MB | 75.0 MB | met |",
			"| whole node with --control-plane idle (agent + API server + runtime), RSS (max) | < 200 MB | - | not measured |",
			"| API server CPU / RSS mean / max (60 s window, 110 pods + 0 Services + 200 ConfigMaps) | 0.50 % / 70.0 / 75.0 MB | - |",
		}, []string{"kube-proxy", "whole node idle (", "unavailable"}},
		{"idle failed", failed, kubeAPI(), []string{
			"| whole node with --control-plane idle (agent + API server + runtime), RSS (max) | < 200 MB | - | not measured |",
			"Whole node with --control-plane idle: unavailable: skiff-apiserver: read process 42 stat: no such file",
		}, []string{"whole node idle ("}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := Run{Runtime: RuntimeExternal, API: tc.api, Shim: tc.shim}
			var b strings.Builder
			if err := Markdown(&b, &Results{Mode: "full", Runs: []Run{run}}, IssueLimits, nil); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, b.String())
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(b.String(), nw) {
					t.Errorf("report has %q:\n%s", nw, b.String())
				}
			}
		})
	}
}

// Results written before issue 36's fields load without them, and the
// new fields survive a round trip.
func TestShimJSON(t *testing.T) {
	var old Shim
	if err := json.Unmarshal([]byte(`{"pods":110,"config_maps":200,"shim_steady":{"rss_max_mb":90}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Services != 0 || old.ServiceProxy || old.Idle != nil || old.Pods != 110 {
		t.Errorf("old results: %+v", old)
	}
	data, err := json.Marshal(shimUnder())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"services":50`, `"service_proxy":true`, `"idle":{"node":{`, `"api_server":{"seconds":10,`, `"total":{"seconds":10,"cpu_percent_of_core":0.8,`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s: %s", key, data)
		}
	}
	var out Shim
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Services != 50 || !out.ServiceProxy || out.Idle == nil || out.Idle.Total.RSSMaxMB != 140 || out.Idle.APIServer.RSSMaxMB != 70 {
		t.Errorf("round trip: %+v", out)
	}
}
