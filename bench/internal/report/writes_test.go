package report

import (
	"math"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/filesnap"
	"github.com/skiffnode/skiff/bench/internal/procfs"
)

func TestMBPerHour(t *testing.T) {
	for _, tc := range []struct {
		bytes   uint64
		seconds float64
		want    float64
	}{
		{1e6, 3600, 1},
		{4096 * 25, 300, 1.2288}, // 25 pages in 5 min
		{0, 300, 0},
		{1e6, 0, math.NaN()},
		{1e6, -1, math.NaN()},
		{1e6, math.NaN(), math.NaN()},
	} {
		got := MBPerHour(tc.bytes, tc.seconds)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("MBPerHour(%d, %v) = %v, want %v", tc.bytes, tc.seconds, got, tc.want)
		}
	}
}

// window is a 360 s window where the agent wrote agentBytes.
func window(agentBytes uint64) *WriteWindow {
	return &WriteWindow{Seconds: 360, Agent: procfs.IO{WriteBytes: agentBytes, CancelledWriteBytes: 4096},
		Containerd: procfs.IO{WriteBytes: 2e6}, Shims: procfs.IO{WriteBytes: 1e6}, ShimCount: 110, DeviceBytes: 50e6, LogBytes: 0,
		Files: []filesnap.Group{{Pattern: "probes.json", Files: 1, Written: 748}}, FilesChanged: 1,
		RuntimeFiles:        []filesnap.Group{{Pattern: "root/io.containerd.metadata.v1.bolt/meta.db", Files: 1, InPlace: 1, InPlaceBytes: 8388608}},
		RuntimeFilesChanged: 1}
}

func TestEvaluateWrites(t *testing.T) {
	const mb = 100000 // 1 MB/h over 360 s
	for _, tc := range []struct {
		name      string
		w         *Writes
		want      []Status
		wantValue []string
	}{
		{"both met", &Writes{Pods: 110, Skiff: &AgentWrites{Steady: window(mb / 2)}, Kubelet: &AgentWrites{Steady: window(20 * mb)}},
			[]Status{Met, Met}, []string{"0.500 MB/h", "40.0x (0.500 vs 20.0 MB/h)"}},
		{"over 1 MB/h and under 10x", &Writes{Pods: 110, Skiff: &AgentWrites{Steady: window(3 * mb)}, Kubelet: &AgentWrites{Steady: window(20 * mb)}},
			[]Status{NotMet, NotMet}, []string{"3.00 MB/h", "6.67x (3.00 vs 20.0 MB/h)"}},
		{"at the line", &Writes{Pods: 110, Skiff: &AgentWrites{Steady: window(mb)}, Kubelet: &AgentWrites{Steady: window(10 * mb)}},
			[]Status{NotMet, Met}, nil},
		{"no kubelet", &Writes{Pods: 110, Skiff: &AgentWrites{Steady: window(mb / 2)}}, []Status{Met, NotRun}, []string{"0.500 MB/h", "-"}},
		{"skiff wrote nothing", &Writes{Pods: 5, Skiff: &AgentWrites{Steady: window(0)}, Kubelet: &AgentWrites{Steady: window(4096)}},
			[]Status{Met, Met}, []string{"0.000 MB/h", "skiff wrote nothing, kubelet 0.041 MB/h"}},
		{"neither wrote", &Writes{Pods: 5, Skiff: &AgentWrites{Steady: window(0)}, Kubelet: &AgentWrites{Steady: window(0)}},
			[]Status{Met, Unknown}, nil},
		{"nothing measured", &Writes{}, []Status{Unknown, Unknown}, []string{"- MB/h", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EvaluateWrites(tc.w, IssueLimits)
			if len(got) != len(tc.want) {
				t.Fatalf("%d targets, want %d", len(got), len(tc.want))
			}
			for i, tg := range got {
				if tg.Status != tc.want[i] {
					t.Errorf("%q: %s (%s), want %s", tg.Name, tg.Status, tg.Value, tc.want[i])
				}
				if tc.wantValue != nil && tg.Value != tc.wantValue[i] {
					t.Errorf("%q: value %q, want %q", tg.Name, tg.Value, tc.wantValue[i])
				}
			}
		})
	}
}

func TestWritesSection(t *testing.T) {
	churn := window(1e6)
	churn.Churned = 30
	w := &Writes{Pods: 110, SettleS: 60, WindowS: 300, ChurnEveryS: 10, Device: "vda", Filesystem: "ext4, no journal",
		Skiff: &AgentWrites{Steady: window(40960), Churn: churn}}
	shim := &Shim{ConfigMaps: 200, Writes: &ControlPlaneWrites{Seconds: 60, DeviceBytes: 1e6,
		Procs:       []ProcWrites{{Name: "skiff-apiserver (etcd embedded)", IO: procfs.IO{WriteBytes: 2e6}}, {Name: "skiff", IO: procfs.IO{WriteBytes: 4096}}},
		FilesListed: true, AgentFiles: []filesnap.Group{{Pattern: "probes.json", Files: 1, Written: 15900}}, AgentFilesChanged: 1}}
	api := &API{Writes: &APIWrites{Skiff: &ControlPlaneWrites{Error: "0 processes with --data-dir=/x, want 1"}}}
	for _, tc := range []struct {
		name string
		run  Run
		want []string
		not  []string
	}{
		{"skiff alone", Run{Runtime: RuntimeExternal, Writes: w}, []string{
			"Storage writes, external (issue 33",
			"Block device: vda, ext4, no journal. Without a journal,",
			"| skiff's own writes, steady, 110 pods | < 1.00 MB/h | 0.410 MB/h | met |",
			"| skiff below the kubelet, steady, 110 pods | >= 10.0x below the kubelet | - | not run |",
			"| the agent (skiff / the kubelet) | 41.0 KB | 4.1 KB | 0.410 | - | - | - |",
			"| containerd's shims, summed | 1.00 MB | 0 B | 10.0 | - | - | - |",
			"| block device, machine-wide | 50.00 MB | - | 500 | - | - | - |",
			"Churn, one pod replaced every 10 s (skiff: 360 s, 110 shims, 30 pods replaced; kubelet: not run)",
			"| skiff, steady | 1 written, 0 removed | (all) | |",
			"| | 1 | `probes.json` | 748 B |",
			"| skiff, steady: containerd | 1 written, 0 removed | (all) | |",
			"| | 1 | `root/io.containerd.metadata.v1.bolt/meta.db` | 0 B; 1 changed in place, 8.39 MB in all |",
		}, []string{"The control plane"}},
		{"the control plane only", Run{Runtime: RuntimeExternal, Shim: shim, API: api}, []string{
			"| control plane shim (skiff-apiserver, etcd embedded), skiff, 200 ConfigMaps | 60 s | skiff-apiserver (etcd embedded) | 2.00 MB | 0 B | 120 |",
			"|  |  | skiff | 4.1 KB | 0 B | 0.246 |",
			"| control plane shim (skiff-apiserver, etcd embedded), skiff, 200 ConfigMaps | 1 written, 0 removed | (all) | |\n| | 1 | `probes.json` | 15.9 KB |",
			"| API pods (kube-apiserver + etcd), skiff | - | unavailable: 0 processes with --data-dir=/x, want 1 | - | - | - |",
		}, []string{"| goal |", "API pods (kube-apiserver + etcd), skiff | 0 written"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !hasWrites(tc.run) {
				t.Fatal("hasWrites = false")
			}
			var b strings.Builder
			writeWrites(&b, "2.5", tc.run, IssueLimits)
			out := b.String()
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("section lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("section has %q:\n%s", s, out)
				}
			}
		})
	}
	if hasWrites(Run{Runtime: RuntimeManaged, Shim: &Shim{}}) {
		t.Error("hasWrites of a run without write figures = true")
	}
}
