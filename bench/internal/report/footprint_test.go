package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// nodeWindow is a footprint window with the given RSS and PSS (max) and
// CPU of the agent, the containerd and n shims, and the children's CPU.
func nodeWindow(pods int, agent, cd, shims procfs.Window, n int, children float64) *NodeFootprint {
	total := procfs.Window{RSSMaxMB: agent.RSSMaxMB + cd.RSSMaxMB + shims.RSSMaxMB, PSSMaxMB: agent.PSSMaxMB + cd.PSSMaxMB + shims.PSSMaxMB,
		CPUPercent: agent.CPUPercent + cd.CPUPercent + shims.CPUPercent + children}
	return &NodeFootprint{Pods: pods, NodeWindow: procfs.NodeWindow{Seconds: 60, Agent: agent, Containerd: cd, Shims: shims,
		ShimCount: n, ChildrenCPUPercent: children, Total: total}}
}

// withPause is f with n pause processes of the given PSS (RSS) in MB, in
// its total too.
func withPause(f *NodeFootprint, who string, n int, pss, rss float64) *NodeFootprint {
	f.AgentName, f.PauseCount = who, n
	f.Pause = procfs.Window{Seconds: 60, PSSMaxMB: pss, RSSMaxMB: rss}
	f.Total.PSSMaxMB += pss
	f.Total.RSSMaxMB += rss
	return f
}

func TestFootprintTable(t *testing.T) {
	managed := Run{Runtime: RuntimeManaged, RuntimeVersion: "containerd v2.4.2", Footprint: &Footprint{
		Idle: nodeWindow(0, procfs.Window{RSSMaxMB: 30, PSSMaxMB: 29, CPUPercent: 0.1}, procfs.Window{RSSMaxMB: 40, PSSMaxMB: 38, CPUPercent: 0.2}, procfs.Window{}, 0, 0),
		Loaded: withPause(nodeWindow(110, procfs.Window{RSSMaxMB: 42, PSSMaxMB: 41, CPUPercent: 2}, procfs.Window{RSSMaxMB: 60, PSSMaxMB: 58, CPUPercent: 5},
			procfs.Window{RSSMaxMB: 200, PSSMaxMB: 60, CPUPercent: 1.5}, 7, 10), "skiff", 110, 1, 11),
		Scale: []NodeFootprint{*withPause(nodeWindow(10, procfs.Window{RSSMaxMB: 36, PSSMaxMB: 35}, procfs.Window{RSSMaxMB: 50, PSSMaxMB: 49},
			procfs.Window{RSSMaxMB: 12, PSSMaxMB: 10}, 1, 1), "skiff", 10, 0.1, 1)},
		Kubelet: withPause(nodeWindow(110, procfs.Window{RSSMaxMB: 130, PSSMaxMB: 128, CPUPercent: 6}, procfs.Window{RSSMaxMB: 60, PSSMaxMB: 58, CPUPercent: 5},
			procfs.Window{RSSMaxMB: 1100, PSSMaxMB: 580, CPUPercent: 20}, 110, 10), "kubelet", 110, 1, 11),
	}}
	// Results from before RuntimeVersion and PSS: the version from
	// Containerd, RSS only.
	external := Run{Runtime: RuntimeExternal, Containerd: "containerd 1.6.20 (CRI): /usr/bin/containerd, plain config",
		Footprint: &Footprint{Loaded: nodeWindow(5, procfs.Window{RSSMaxMB: 35, CPUPercent: 0.5}, procfs.Window{RSSMaxMB: 50, CPUPercent: 1},
			procfs.Window{RSSMaxMB: 45, CPUPercent: 0.25}, 5, 0.5)}}
	header := "| runtime | agent | state | pods | window | agent PSS (RSS) / CPU | containerd PSS (RSS) / CPU | shims (n) PSS (RSS) / CPU | pause (n) PSS (RSS) | runc + execs CPU | total PSS (RSS) / CPU |"
	managedIdle := "| containerd v2.4.2 (managed) | skiff | idle | 0 | 60 s | 29.0 (30.0) MB / 0.10 % | 38.0 (40.0) MB / 0.20 % | (0) (0.0 MB) / 0.00 % | - | 0.00 % | 67.0 (70.0) MB / 0.30 % |"
	managed10 := "| containerd v2.4.2 (managed) | skiff | loaded | 10 | 60 s | 35.0 (36.0) MB / 0.00 % | 49.0 (50.0) MB / 0.00 % | (1) 10.0 (12.0) MB / 0.00 % | (10) 0.1 (1.0) MB | 1.00 % | 94.1 (99.0) MB / 1.00 % |"
	managedLoaded := "| containerd v2.4.2 (managed) | skiff | loaded | 110 | 60 s | 41.0 (42.0) MB / 2.00 % | 58.0 (60.0) MB / 5.00 % | (7) 60.0 (200.0) MB / 1.50 % | (110) 1.0 (11.0) MB | 10.00 % | 160.0 (313.0) MB / 18.50 % |"
	kubeletLoaded := "| containerd v2.4.2 (managed) | kubelet | loaded | 110 | 60 s | 128.0 (130.0) MB / 6.00 % | 58.0 (60.0) MB / 5.00 % | (110) 580.0 (1100.0) MB / 20.00 % | (110) 1.0 (11.0) MB | 10.00 % | 767.0 (1301.0) MB / 41.00 % |"
	vs := "- containerd v2.4.2 (managed), 110 pods: the whole node with skiff 160 MB PSS, with the kubelet 767 MB (0.21x); shims 60 MB (7) vs 580 MB (110)."
	externalLoaded := "| containerd 1.6.20 (external) | skiff | loaded | 5 | 60 s | (35.0 MB) / 0.50 % | (50.0 MB) / 1.00 % | (5) (45.0 MB) / 0.25 % | - | 0.50 % | (130.0 MB) / 2.25 % |"
	for _, tc := range []struct {
		name    string
		runs    []Run
		want    []string // in this order
		notWant []string
	}{
		{"both runtimes", []Run{managed, external}, []string{"## Node footprint (issues 31, 35)", header, managedIdle, managed10, managedLoaded, kubeletLoaded, externalLoaded, vs, "k3s's published resource profile"},
			[]string{"| containerd 1.6.20 (external) | skiff | idle", "(external), 5 pods: the whole node"}},
		{"one runtime", []Run{external}, []string{"## Node footprint", externalLoaded}, []string{"(managed)"}},
		{"not measured", []Run{{Runtime: RuntimeManaged}, {Runtime: RuntimeExternal}}, nil, []string{"Node footprint", "k3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Markdown(&b, &Results{Mode: "quick", Runs: tc.runs}, IssueLimits, nil); err != nil {
				t.Fatal(err)
			}
			md, at := b.String(), 0
			for _, want := range tc.want {
				i := strings.Index(md[at:], want)
				if i < 0 {
					t.Fatalf("report lacks %q after offset %d:\n%s", want, at, md)
				}
				at += i + len(want)
			}
			for _, nw := range tc.notWant {
				if strings.Contains(md, nw) {
					t.Errorf("report has %q:\n%s", nw, md)
				}
			}
		})
	}
}

func TestRunVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  Run
		want string
	}{
		{"from the CRI version", Run{Runtime: RuntimeManaged, RuntimeVersion: "containerd v2.4.2", Containerd: "containerd 1.6.20 (CRI): x"}, "containerd v2.4.2"},
		{"older results", Run{Runtime: RuntimeManaged, Containerd: "containerd 1.6.20 (CRI): containerd from PATH"}, "containerd 1.6.20"},
		{"unknown", Run{Runtime: RuntimeExternal, Containerd: "a plain config"}, RuntimeExternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run.Version(); got != tc.want {
				t.Errorf("Version = %q, want %q", got, tc.want)
			}
		})
	}
}

// Results written before the footprint load without it, and a footprint
// survives a round trip.
func TestFootprintJSON(t *testing.T) {
	var old Results
	if err := json.Unmarshal([]byte(`{"mode":"full","runs":[{"runtime":"managed","containerd":"containerd 1.6.20 (CRI): x","density":{"pods":110}}]}`), &old); err != nil {
		t.Fatal(err)
	}
	if r := old.Runs[0]; r.Footprint != nil || r.RuntimeVersion != "" || r.Density.Pods != 110 {
		t.Errorf("old results: %+v", r)
	}
	in := Run{Runtime: RuntimeManaged, RuntimeVersion: "containerd v2.4.2", Footprint: &Footprint{
		Loaded: nodeWindow(110, procfs.Window{RSSMaxMB: 42}, procfs.Window{RSSMeanMB: 55, RSSMaxMB: 60}, procfs.Window{RSSMaxMB: 1100}, 110, 10)}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"runtime_version":"containerd v2.4.2"`, `"loaded":{"pods":110,`, `"shim_count":110`, `"children_cpu_percent_of_core":10`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s: %s", key, data)
		}
	}
	var out Run
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if f := out.Footprint; f == nil || f.Idle != nil || f.Loaded.Containerd.RSSMeanMB != 55 || f.Loaded.ShimCount != 110 {
		t.Errorf("round trip: %+v", out.Footprint)
	}
}

// TestWhyFootprint: a missed footprint target is explained part by part,
// with the node's ratio without its agent, and a shim per pod is named as
// the runtime's; a goal within the runtime's reach is not called out of it.
func TestWhyFootprint(t *testing.T) {
	perPod := &Footprint{
		Loaded: withPause(nodeWindow(110, procfs.Window{PSSMaxMB: 44}, procfs.Window{PSSMaxMB: 119},
			procfs.Window{PSSMaxMB: 393}, 110, 0), "skiff", 110, 75, 75),
		Kubelet: withPause(nodeWindow(110, procfs.Window{PSSMaxMB: 129}, procfs.Window{PSSMaxMB: 131},
			procfs.Window{PSSMaxMB: 406}, 110, 0), "kubelet", 110, 75, 75),
	}
	shared := &Footprint{
		Loaded: withPause(nodeWindow(110, procfs.Window{PSSMaxMB: 46}, procfs.Window{PSSMaxMB: 143},
			procfs.Window{PSSMaxMB: 78}, 8, 0), "skiff", 110, 1, 1),
		Kubelet: perPod.Kubelet,
	}
	for _, tc := range []struct {
		name          string
		fp            *Footprint
		want, notWant []string
	}{
		{"a shim per pod", perPod, []string{
			"| agent | 44.0 MB | 129.0 MB | -85.0 MB |",
			"| shims (skiff 110, kubelet 110) | 393.0 MB | 406.0 MB | -13.0 MB |",
			"| pause (skiff 110, kubelet 110) | 75.0 MB | 75.0 MB | +0.0 MB |",
			"| whole node | 631.0 MB | 741.0 MB | -110.0 MB |",
			"Without its agent, skiff's node would be 587 MB: 0.79x the kubelet's whole node (goal 0.70x). The runtime's own parts alone miss the goal",
			"Each pod has its own shim here (110 shims for 110 pods)",
		}, nil},
		{"shared shims", shared, []string{"| shims (skiff 8, kubelet 110) | 78.0 MB | 406.0 MB | -328.0 MB |", "Without its agent, skiff's node would be 222 MB: 0.30x"},
			[]string{"alone miss the goal", "its own shim"}},
		{"no kubelet", &Footprint{Loaded: perPod.Loaded}, []string{"- Not measured."}, []string{"| agent |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			whyFootprint(&b, tc.fp, 0.70)
			got := b.String()
			checkContains(t, got, tc.want)
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, got)
				}
			}
		})
	}
}
