package server

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// promContentType is the Prometheus text exposition format's.
const promContentType = "text/plain; version=0.0.4; charset=utf-8"

// resourceMetric is one metric family of /metrics/resource, with the
// kubelet's name, help and type (pkg/kubelet/metrics/collectors/
// resource_metrics.go), which metrics-server reads.
type resourceMetric struct {
	name, help, typ string
}

var (
	metricContainerCPU   = resourceMetric{"container_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the container in core-seconds", "counter"}
	metricContainerMem   = resourceMetric{"container_memory_working_set_bytes", "[STABLE] Current working set of the container in bytes", "gauge"}
	metricContainerStart = resourceMetric{"container_start_time_seconds", "[STABLE] Start time of the container since unix epoch in seconds", "gauge"}
	metricNodeCPU        = resourceMetric{"node_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the node in core-seconds", "counter"}
	metricNodeMem        = resourceMetric{"node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes", "gauge"}
	metricPodCPU         = resourceMetric{"pod_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", "counter"}
	metricPodMem         = resourceMetric{"pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", "gauge"}
	metricScrapeError    = resourceMetric{"resource_scrape_error", "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", "gauge"}
)

// sample is one line of a family: labels (name, value pairs) and the
// value at a time (zero: no timestamp).
type sample struct {
	labels []string
	value  float64
	at     time.Time
}

// handleResourceMetrics serves GET /metrics/resource as the kubelet does:
// the node's, pods' and containers' cpu time and working set from the
// stats summary, in the Prometheus text format with the samples' times,
// which metrics-server (kubectl top) scrapes. Without a StatsProvider it
// reports resource_scrape_error 1.
func (s *Server) handleResourceMetrics(w http.ResponseWriter, r *http.Request) {
	var sum *statsapi.Summary
	if s.stats != nil {
		sum = s.stats.StatsSummary(r.Context())
	}
	w.Header().Set("Content-Type", promContentType)
	bw := bufio.NewWriter(w)
	writeResourceMetrics(bw, sum)
	if err := bw.Flush(); err != nil && s.log != nil {
		s.log.Debug("writing /metrics/resource", "err", err)
	}
}

// writeResourceMetrics writes sum's families (nil: only the scrape error).
func writeResourceMetrics(w *bufio.Writer, sum *statsapi.Summary) {
	fams := map[resourceMetric][]sample{}
	add := func(m resourceMetric, value float64, at metav1.Time, labels ...string) {
		fams[m] = append(fams[m], sample{labels: labels, value: value, at: at.Time})
	}
	scrapeError := 1.0
	if sum != nil {
		scrapeError = 0
		if c := sum.Node.CPU; c != nil && c.UsageCoreNanoSeconds != nil {
			add(metricNodeCPU, float64(*c.UsageCoreNanoSeconds)/1e9, c.Time)
		}
		if m := sum.Node.Memory; m != nil && m.WorkingSetBytes != nil {
			add(metricNodeMem, float64(*m.WorkingSetBytes), m.Time)
		}
		for _, p := range sum.Pods {
			ns, pod := p.PodRef.Namespace, p.PodRef.Name
			if c := p.CPU; c != nil && c.UsageCoreNanoSeconds != nil {
				add(metricPodCPU, float64(*c.UsageCoreNanoSeconds)/1e9, c.Time, "namespace", ns, "pod", pod)
			}
			if m := p.Memory; m != nil && m.WorkingSetBytes != nil {
				add(metricPodMem, float64(*m.WorkingSetBytes), m.Time, "namespace", ns, "pod", pod)
			}
			for _, c := range p.Containers {
				l := []string{"container", c.Name, "namespace", ns, "pod", pod}
				if cpu := c.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
					add(metricContainerCPU, float64(*cpu.UsageCoreNanoSeconds)/1e9, cpu.Time, l...)
				}
				if m := c.Memory; m != nil && m.WorkingSetBytes != nil {
					add(metricContainerMem, float64(*m.WorkingSetBytes), m.Time, l...)
				}
				if !c.StartTime.IsZero() {
					add(metricContainerStart, float64(c.StartTime.UnixNano())/1e9, metav1.Time{}, l...)
				}
			}
		}
	}
	fams[metricScrapeError] = []sample{{value: scrapeError}}
	// The kubelet's order: by family name.
	for _, m := range []resourceMetric{metricContainerCPU, metricContainerMem, metricContainerStart,
		metricNodeCPU, metricNodeMem, metricPodCPU, metricPodMem, metricScrapeError} {
		samples := fams[m]
		if len(samples) == 0 {
			continue
		}
		_, _ = w.WriteString("# HELP " + m.name + " " + m.help + "\n# TYPE " + m.name + " " + m.typ + "\n")
		for _, s := range samples {
			writeSample(w, m.name, s)
		}
	}
}

// writeSample writes one exposition line: name{labels} value [ms].
func writeSample(w *bufio.Writer, name string, s sample) {
	_, _ = w.WriteString(name)
	if len(s.labels) > 0 {
		_ = w.WriteByte('{')
		for i := 0; i+1 < len(s.labels); i += 2 {
			if i > 0 {
				_ = w.WriteByte(',')
			}
			_, _ = w.WriteString(s.labels[i] + `="` + escapeLabel(s.labels[i+1]) + `"`)
		}
		_ = w.WriteByte('}')
	}
	_, _ = w.WriteString(" " + strconv.FormatFloat(s.value, 'g', -1, 64))
	if !s.at.IsZero() {
		_, _ = w.WriteString(" " + strconv.FormatInt(s.at.UnixMilli(), 10))
	}
	_ = w.WriteByte('\n')
}

// labelEscaper escapes a label value as the text format requires.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }
