package node

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/runtime/fake"
	"github.com/skiffnode/skiff/server"
)

// TestKubeletAPIServesMetrics wires the agent's metrics as node.New does (newAgentMetrics, addAgent)
// (the kubelet's metrics, the instrumented runtime, the agent's running
// counts) and scrapes /metrics on the kubelet API over HTTPS.
func TestKubeletAPIServesMetrics(t *testing.T) {
	mx, err := newAgentMetrics("node1")
	if err != nil {
		t.Fatal(err)
	}
	rt := mx.kubelet.InstrumentRuntime(fake.New(time.Now))
	a, err := agent.New(agent.Config{
		NodeName: "node1", Runtime: rt, PodLogsDir: t.TempDir(), Metrics: mx.kubelet,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mx.addAgent(a); err != nil {
		t.Fatal(err)
	}
	if err := mx.addAgent(a); err == nil {
		t.Error("the running collector registered twice")
	}
	if _, err := rt.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	url, hc := serveKubeletAPI(t, server.Config{Metrics: mx.handler(nil)})
	code, ctype, body := get(t, hc, url+"/metrics")
	if code != 200 || !strings.HasPrefix(ctype, "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics = %d (%s), want 200 text/plain; version=0.0.4", code, ctype)
	}
	for _, want := range []string{
		`kubelet_node_name{node="node1"} 1`,
		`kubelet_runtime_operations_total{operation_type="version"} 1`,
		"kubelet_running_pods 0",
		`kubelet_running_containers{container_state="running"} 0`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
