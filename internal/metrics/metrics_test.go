package metrics

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/skiffnode/skiff/agent"
)

// newTestKubelet registers the kubelet's metrics for node "node1" on a
// fresh registry, without the process collectors.
func newTestKubelet(t *testing.T, opts Options) (*Kubelet, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.NodeName = "node1"
	k, err := New(reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return k, reg
}

// family gathers reg and returns the family name (nil if absent).
func family(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// sample returns the metric of family name whose labels are labels.
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mf := family(t, reg, name)
	if mf == nil {
		t.Fatalf("no metric family %s", name)
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if reflect.DeepEqual(got, labels) || (len(got) == 0 && len(labels) == 0) {
			return m
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

// TestNewRegistersKubeletNames checks names, types, label names and
// buckets against the kubelet v1.34's pkg/kubelet/metrics.
func TestNewRegistersKubeletNames(t *testing.T) {
	_, reg := newTestKubelet(t, Options{})
	podStart := []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	tests := []struct {
		name    string
		typ     dto.MetricType
		labels  []string
		buckets []float64
	}{
		{"kubelet_node_name", dto.MetricType_GAUGE, []string{"node"}, nil},
		{"kubelet_pod_worker_duration_seconds", dto.MetricType_HISTOGRAM, []string{"operation_type"}, prometheus.DefBuckets},
		{"kubelet_pod_start_duration_seconds", dto.MetricType_HISTOGRAM, nil, podStart},
		{"kubelet_pod_start_sli_duration_seconds", dto.MetricType_HISTOGRAM, nil, podStart},
		{"kubelet_pleg_relist_duration_seconds", dto.MetricType_HISTOGRAM, nil, prometheus.DefBuckets},
		{"kubelet_started_pods_total", dto.MetricType_COUNTER, nil, nil},
		{"kubelet_started_pods_errors_total", dto.MetricType_COUNTER, nil, nil},
		{"kubelet_started_containers_total", dto.MetricType_COUNTER, []string{"container_type"}, nil},
		{"kubelet_restarted_pods_total", dto.MetricType_COUNTER, []string{"static"}, nil},
		{"kubelet_runtime_operations_total", dto.MetricType_COUNTER, []string{"operation_type"}, nil},
		{"kubelet_runtime_operations_errors_total", dto.MetricType_COUNTER, []string{"operation_type"}, nil},
		{"kubelet_runtime_operations_duration_seconds", dto.MetricType_HISTOGRAM, []string{"operation_type"},
			[]float64{.005, .0125, .03125, .078125, .1953125, .48828125, 1.220703125, 3.0517578125, 7.62939453125, 19.073486328125, 47.6837158203125, 119.20928955078125, 298.0232238769531, 745.0580596923828}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf := family(t, reg, tt.name)
			if mf == nil {
				t.Fatal("not registered")
			}
			if mf.GetType() != tt.typ {
				t.Errorf("type %v, want %v", mf.GetType(), tt.typ)
			}
			m := mf.GetMetric()[0]
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName())
			}
			if !slices.Equal(labels, tt.labels) {
				t.Errorf("labels %v, want %v", labels, tt.labels)
			}
			var buckets []float64
			for _, b := range m.GetHistogram().GetBucket() {
				buckets = append(buckets, b.GetUpperBound())
			}
			if !slices.Equal(buckets, tt.buckets) {
				t.Errorf("buckets %v, want %v", buckets, tt.buckets)
			}
		})
	}
}

// TestNodeNameAndProcessCollectors checks kubelet_node_name's one sample
// and that the Go and process collectors come along unless left out.
func TestNodeNameAndProcessCollectors(t *testing.T) {
	_, reg := newTestKubelet(t, Options{})
	want := `# HELP kubelet_node_name The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_node_name"); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes"} {
		if family(t, reg, name) == nil {
			t.Errorf("%s missing", name)
		}
	}
	_, bare := newTestKubelet(t, Options{NoProcessCollectors: true})
	if family(t, bare, "go_goroutines") != nil {
		t.Error("go_goroutines registered with NoProcessCollectors")
	}
}

// TestNewRefusesARegistryTwice: a second set of the same names on one
// registry is an error, not a panic.
func TestNewRefusesARegistryTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg, Options{NodeName: "a", NoProcessCollectors: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, Options{NodeName: "a", NoProcessCollectors: true}); err == nil {
		t.Error("second New on the same registry succeeded")
	}
}

// TestKubeletRecordsAgentMetrics drives the agent.Metrics methods and
// reads the samples they must change.
func TestKubeletRecordsAgentMetrics(t *testing.T) {
	type want struct {
		name   string
		labels map[string]string
		value  float64 // a counter's value, or a histogram's sample count
		sum    float64 // a histogram's sum
	}
	tests := []struct {
		name   string
		record func(k *Kubelet)
		want   []want
	}{
		{"worker create", func(k *Kubelet) { k.PodWorkerDuration(agent.OperationCreate, 1500*time.Millisecond) },
			[]want{{"kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "create"}, 1, 1.5}}},
		{"worker kill", func(k *Kubelet) { k.PodWorkerDuration(agent.OperationKill, time.Second) },
			[]want{{"kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "kill"}, 1, 1}}},
		{"pod start", func(k *Kubelet) { k.PodStartDuration(7 * time.Second); k.PodStartSLIDuration(2 * time.Second) },
			[]want{{"kubelet_pod_start_duration_seconds", nil, 1, 7}, {"kubelet_pod_start_sli_duration_seconds", nil, 1, 2}}},
		{"relist", func(k *Kubelet) { k.RelistDuration(20 * time.Millisecond) },
			[]want{{"kubelet_pleg_relist_duration_seconds", nil, 1, 0.02}}},
		{"sandboxes", func(k *Kubelet) { k.SandboxStarted(false); k.SandboxStarted(true) },
			[]want{{"kubelet_started_pods_total", nil, 2, 0}, {"kubelet_started_pods_errors_total", nil, 1, 0}}},
		{"containers", func(k *Kubelet) {
			k.ContainerStarted(agent.TypeInitContainer, "")
			k.ContainerStarted(agent.TypeContainer, "ErrImagePull")
			k.ContainerStarted(agent.TypeEphemeralContainer, "")
		}, []want{
			{"kubelet_started_containers_total", map[string]string{"container_type": "init_container"}, 1, 0},
			{"kubelet_started_containers_total", map[string]string{"container_type": "container"}, 1, 0},
			{"kubelet_started_containers_total", map[string]string{"container_type": "ephemeral_container"}, 1, 0},
			{"kubelet_started_containers_errors_total", map[string]string{"container_type": "container", "code": "ErrImagePull"}, 1, 0},
		}},
		{"restarts", func(k *Kubelet) { k.PodRestarted(true); k.PodRestarted(true); k.PodRestarted(false) },
			[]want{
				{"kubelet_restarted_pods_total", map[string]string{"static": "true"}, 2, 0},
				{"kubelet_restarted_pods_total", map[string]string{"static": ""}, 1, 0},
			}},
		{"eviction", func(k *Kubelet) { k.PodEvicted(agent.EvictionSignalEmptyDirFsLimit) },
			[]want{{"kubelet_evictions", map[string]string{"eviction_signal": "emptydirfs.limit"}, 1, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, reg := newTestKubelet(t, Options{NoProcessCollectors: true})
			tt.record(k)
			for _, w := range tt.want {
				m := sample(t, reg, w.name, w.labels)
				got, sum := m.GetCounter().GetValue(), 0.0
				if h := m.GetHistogram(); h != nil {
					got, sum = float64(h.GetSampleCount()), h.GetSampleSum()
				}
				if got != w.value || sum != w.sum {
					t.Errorf("%s%v = %v (sum %v), want %v (sum %v)", w.name, w.labels, got, sum, w.value, w.sum)
				}
			}
		})
	}
}
