package metrics

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// failing is a collector whose every scrape fails.
type failing struct{ desc *prometheus.Desc }

func (f failing) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }
func (f failing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.desc, errors.New("collector broke"))
}

// TestHandler serves the text format with the kubelet's names, and keeps
// serving the other metrics when a collector fails.
func TestHandler(t *testing.T) {
	tests := []struct {
		name   string
		broken bool
	}{{"healthy", false}, {"a collector fails", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reg := newTestKubelet(t, Options{})
			if tt.broken {
				reg.MustRegister(failing{prometheus.NewDesc("broken", "fails", nil, nil)})
			}
			rec := httptest.NewRecorder()
			Handler(reg, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body := rec.Body.String()
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
				t.Fatalf("GET /metrics = %d (%s), want 200 text/plain; version=0.0.4", rec.Code, rec.Header().Get("Content-Type"))
			}
			for _, s := range []string{`kubelet_node_name{node="node1"} 1`, "# TYPE kubelet_pod_start_duration_seconds histogram", "process_resident_memory_bytes"} {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q", s)
				}
			}
		})
	}
}
