package metrics

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skiffnode/skiff/agent"
)

// countSource returns counts, and counts how often it was asked.
type countSource struct {
	counts agent.RuntimeCounts
	asked  atomic.Int32
}

func (c *countSource) RuntimeCounts() agent.RuntimeCounts {
	c.asked.Add(1)
	return c.counts
}

// TestRunningCollector checks the kubelet's running pods and containers
// gauges, read from the source at each scrape.
func TestRunningCollector(t *testing.T) {
	tests := []struct {
		name   string
		counts agent.RuntimeCounts
		want   string
	}{
		{"none", agent.RuntimeCounts{}, `
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 0
kubelet_running_containers{container_state="running"} 0
kubelet_running_containers{container_state="unknown"} 0
kubelet_running_pods 0
`},
		{"some", agent.RuntimeCounts{RunningPods: 3, Created: 1, Running: 5, Exited: 2, Unknown: 4}, `
kubelet_running_containers{container_state="created"} 1
kubelet_running_containers{container_state="exited"} 2
kubelet_running_containers{container_state="running"} 5
kubelet_running_containers{container_state="unknown"} 4
kubelet_running_pods 3
`},
	}
	const head = `# HELP kubelet_running_containers Number of containers currently running
# TYPE kubelet_running_containers gauge
# HELP kubelet_running_pods Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &countSource{counts: tt.counts}
			reg := prometheus.NewRegistry()
			if err := reg.Register(NewRunningCollector(src)); err != nil {
				t.Fatal(err)
			}
			want := head + tt.want
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
				t.Error(err)
			}
			before := src.asked.Load()
			src.counts.RunningPods++
			if got := sample(t, reg, "kubelet_running_pods", nil).GetGauge().GetValue(); got != float64(tt.counts.RunningPods+1) {
				t.Errorf("after a change: running pods %v, want %d", got, tt.counts.RunningPods+1)
			}
			if src.asked.Load() != before+1 {
				t.Errorf("source asked %d times by one scrape, want 1", src.asked.Load()-before)
			}
		})
	}
}
