package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiffnode/skiff/agent"
)

// CountSource gives the runtime's pods and containers as last listed
// (*agent.Agent implements it: the relist loop owns the listing and
// stores its counts, nothing is listed again for a scrape).
type CountSource interface {
	// RuntimeCounts returns the counts of the latest listing. Safe for
	// concurrent use; non-blocking.
	RuntimeCounts() agent.RuntimeCounts
}

// RunningCollector is kubelet_running_pods (pods with a ready sandbox)
// and kubelet_running_containers{container_state} (containers by state:
// created, running, exited, unknown), computed at each scrape from a
// CountSource, as the kubelet's gauges that its PLEG sets at each relist.
// All four states are always exported. Safe for concurrent use.
type RunningCollector struct {
	src                  CountSource
	podsDesc, containers *prometheus.Desc
}

var _ prometheus.Collector = (*RunningCollector)(nil)

// NewRunningCollector returns a RunningCollector asking src; register it
// on the registry that New registered the kubelet's metrics on.
func NewRunningCollector(src CountSource) *RunningCollector {
	return &RunningCollector{
		src: src,
		podsDesc: prometheus.NewDesc(prometheus.BuildFQName("", subsystem, "running_pods"),
			"Number of pods that have a running pod sandbox", nil, nil),
		containers: prometheus.NewDesc(prometheus.BuildFQName("", subsystem, "running_containers"),
			"Number of containers currently running", []string{"container_state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *RunningCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.podsDesc
	ch <- c.containers
}

// Collect implements prometheus.Collector: one RuntimeCounts call.
func (c *RunningCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.src.RuntimeCounts()
	ch <- prometheus.MustNewConstMetric(c.podsDesc, prometheus.GaugeValue, float64(n.RunningPods))
	for _, s := range []struct {
		state string
		count int
	}{{"created", n.Created}, {"running", n.Running}, {"exited", n.Exited}, {"unknown", n.Unknown}} {
		ch <- prometheus.MustNewConstMetric(c.containers, prometheus.GaugeValue, float64(s.count), s.state)
	}
}
