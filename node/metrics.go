package node

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/metrics"
)

// agentMetrics are the agent's /metrics: a registry of its own (nothing
// registers on client_golang's global one) with the kubelet's metrics.
type agentMetrics struct {
	reg     *prometheus.Registry
	kubelet *metrics.Kubelet
}

// newAgentMetrics creates the registry and the kubelet's metrics for
// node, with the Go runtime's and the process's collectors.
func newAgentMetrics(node string) (*agentMetrics, error) {
	reg := prometheus.NewRegistry()
	k, err := metrics.New(reg, metrics.Options{NodeName: node})
	if err != nil {
		return nil, err
	}
	return &agentMetrics{reg: reg, kubelet: k}, nil
}

// addAgent registers the running pods and containers that a's relist
// counts, read at each scrape.
func (m *agentMetrics) addAgent(a *agent.Agent) error {
	if err := m.reg.Register(metrics.NewRunningCollector(a)); err != nil {
		return fmt.Errorf("register running pods and containers: %w", err)
	}
	return nil
}

// handler serves the registry on /metrics.
func (m *agentMetrics) handler(log *slog.Logger) http.Handler { return metrics.Handler(m.reg, log) }
