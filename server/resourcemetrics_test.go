package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestResourceMetrics: /metrics/resource has the kubelet's families, names,
// labels and millisecond timestamps that metrics-server reads (kubectl
// top), label values escaped; without stats only resource_scrape_error 1.
func TestResourceMetrics(t *testing.T) {
	at := metav1.NewTime(time.UnixMilli(1764000000123))
	start := metav1.NewTime(time.Unix(1764000000, 500000000))
	u := func(v uint64) *uint64 { return &v }
	sum := &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n1",
			CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(357350000000)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(1400000000)}},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: `we"b`, Namespace: "default", UID: "u1"},
			CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(2500000000)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(4096)},
			Containers: []statsapi.ContainerStats{{Name: "app", StartTime: start,
				CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: u(2000000000)},
				Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: u(2048)}}},
		}},
	}
	want := `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="we\"b"} 2 1764000000123
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="we\"b"} 2048 1764000000123
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="default",pod="we\"b"} 1.7640000005e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 357.35 1764000000123
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1.4e+09 1764000000123
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="we\"b"} 2.5 1764000000123
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="we\"b"} 4096 1764000000123
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`
	tests := []struct {
		name  string
		stats StatsProvider
		want  string
	}{
		{"summary", fakeStats{sum}, want},
		{"no stats", nil, "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			New(Config{Stats: tt.stats}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/resource", nil))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != promContentType {
				t.Fatalf("GET /metrics/resource = %d (%s)", rec.Code, rec.Header().Get("Content-Type"))
			}
			if got := rec.Body.String(); got != tt.want {
				t.Errorf("body:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
