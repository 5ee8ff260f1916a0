package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

func TestShimReadyFromLog(t *testing.T) {
	started := `time=2026-11-25T04:30:00.100Z level=INFO msg="started skiff-apiserver" pid=42 dataDir=/r/apiserver log=/r/apiserver/log`
	ready := `time=2026-11-25T04:30:00.850Z level=INFO msg="skiff-apiserver ready" url=https://127.0.0.1:6443 adminKubeconfig=/r/admin.kubeconfig`
	restarted := `time=2026-11-25T04:31:00.000Z level=INFO msg="started skiff-apiserver" pid=43 dataDir=/r/apiserver log=/r/apiserver/log`
	readyAgain := `time=2026-11-25T04:31:00.300Z level=INFO msg="skiff-apiserver ready" url=https://127.0.0.1:6443 adminKubeconfig=/r/admin.kubeconfig`
	other := `time=2026-11-25T04:30:00.500Z level=INFO msg="node registered" node=bench`
	for _, tc := range []struct {
		name    string
		lines   []string
		want    float64
		wantErr string
	}{
		{"one start", []string{other, started, other, ready}, 0.75, ""},
		{"the last start", []string{started, ready, restarted, readyAgain}, 0.3, ""},
		{"not ready yet", []string{started, ready, restarted}, 0, "no \"started skiff-apiserver\" line followed by"},
		{"ready without a start", []string{ready}, 0, "no \"started skiff-apiserver\""},
		{"no time", []string{`level=INFO msg="started skiff-apiserver"`}, 0, "without time="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shimReadyFromLog(strings.Join(tc.lines, "\n") + "\n")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestShimServiceLabels(t *testing.T) {
	for _, tc := range []struct {
		name           string
		pods, services int
		want           []int // per Service, how many pods it selects
	}{
		{"quick", 5, 3, []int{2, 2, 1}},
		{"full", 110, 50, append(slices.Repeat([]int{3}, 10), slices.Repeat([]int{2}, 40)...)},
		{"fewer pods than Services", 2, 3, []int{1, 1, 0}},
		{"no Services", 5, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels := shimServiceLabels(tc.services)
			if tc.services == 0 {
				if labels != nil {
					t.Fatal("labels for no Services, want none")
				}
				return
			}
			got := make([]int, tc.services)
			for j := range tc.services {
				svc := shimService(j)
				if svc.Spec.Type != v1.ServiceTypeClusterIP || svc.Namespace != agentNamespace || !strings.HasPrefix(svc.Name, shimServicePrefix) {
					t.Fatalf("Service %d: %+v", j, svc)
				}
				sel := k8slabels.SelectorFromSet(svc.Spec.Selector)
				for i := range tc.pods {
					if sel.Matches(k8slabels.Set(labels(i))) {
						got[j]++
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("pods per Service %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadyEndpoints(t *testing.T) {
	ready, notReady := true, false
	slice := func(svc string, conds ...*bool) discoveryv1.EndpointSlice {
		s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{discoveryv1.LabelServiceName: svc}}}
		for _, c := range conds {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: c}})
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   int
	}{
		{"none", nil, 0},
		{"ready ones only", []discoveryv1.EndpointSlice{slice("bench-svc-0", &ready, &notReady, nil), slice("bench-svc-1", &ready, &ready)}, 3},
		{"others' Services left out", []discoveryv1.EndpointSlice{slice("kube-dns", &ready), slice("kubernetes", &ready), slice("bench-svc-2", &ready)}, 1},
		{"a slice without the label", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readyEndpoints(tc.slices); got != tc.want {
				t.Errorf("readyEndpoints = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSummarizeControlPlaneNode(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mb := uint64(1e6)
	sample := func(s int, agentRSS, cdRSS, apiRSS uint64, ticks uint64) controlPlaneSample {
		at := t0.Add(time.Duration(s) * time.Second)
		return controlPlaneSample{
			node: procfs.NodeSample{At: at,
				Agent:      procfs.Sample{At: at, CPUTicks: ticks, RSSBytes: agentRSS * mb, PSSBytes: (agentRSS - 1) * mb},
				Containerd: procfs.Sample{At: at, CPUTicks: 2 * ticks, RSSBytes: cdRSS * mb, PSSBytes: (cdRSS - 1) * mb},
				Shims:      map[int]procfs.Sample{}, Pause: map[int]procfs.Sample{}},
			apiServer: procfs.Sample{At: at, CPUTicks: 3 * ticks, RSSBytes: apiRSS * mb, PSSBytes: (apiRSS - 1) * mb},
		}
	}
	for _, tc := range []struct {
		name    string
		samples []controlPlaneSample
		// total RSS max and mean, PSS max, CPU; the API server's RSS max
		want    [5]float64
		wantErr string
	}{
		// 10 s; ticks 0 -> 10: agent 1 %, containerd 2 %, API server 3 %.
		{"the maxima at different samples", []controlPlaneSample{sample(0, 30, 40, 80, 0), sample(5, 35, 40, 70, 5), sample(10, 30, 45, 75, 10)},
			[5]float64{150, 445.0 / 3, 147, 6, 80}, ""},
		{"one sample", []controlPlaneSample{sample(0, 30, 40, 80, 0)}, [5]float64{}, "at least 2"},
		{"the API server's ticks went back", []controlPlaneSample{sample(0, 30, 40, 80, 10), func() controlPlaneSample {
			s := sample(10, 30, 40, 80, 20)
			s.apiServer.CPUTicks = 1
			return s
		}()}, [5]float64{}, "skiff-apiserver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := summarizeControlPlaneNode(tc.samples)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			figures := [5]float64{got.Total.RSSMaxMB, got.Total.RSSMeanMB, got.Total.PSSMaxMB, got.Total.CPUPercent, got.APIServer.RSSMaxMB}
			for i := range figures {
				if math.Abs(figures[i]-tc.want[i]) > 1e-9 {
					t.Errorf("figures %v, want %v", figures, tc.want)
					break
				}
			}
			if got.Node.Agent.RSSMaxMB != 35 || got.Node.Containerd.RSSMaxMB != 45 || got.Total.Seconds != 10 {
				t.Errorf("node window %+v", got.Node)
			}
		})
	}
}
