package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

type fakeStats struct{ sum *statsapi.Summary }

func (f fakeStats) StatsSummary(context.Context) *statsapi.Summary { return f.sum }

func TestStatsSummary(t *testing.T) {
	ws, cores := uint64(4096), uint64(250000000)
	sum := &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n1"},
		Pods: []statsapi.PodStats{{
			PodRef:     statsapi.PodReference{Name: "web", Namespace: "default", UID: "u1"},
			CPU:        &statsapi.CPUStats{UsageNanoCores: &cores},
			Memory:     &statsapi.MemoryStats{WorkingSetBytes: &ws},
			Containers: []statsapi.ContainerStats{{Name: "app", Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}}},
		}},
	}
	srv := httptest.NewServer(New(Config{Stats: fakeStats{sum}}).Handler())
	defer srv.Close()
	code, body := get(t, srv, http.MethodGet, "/stats/summary")
	if code != http.StatusOK || !strings.Contains(body, `"podRef":{"name":"web","namespace":"default","uid":"u1"}`) ||
		!strings.Contains(body, `"usageNanoCores":250000000`) || !strings.Contains(body, `"workingSetBytes":4096`) {
		t.Fatalf("GET /stats/summary = %d %s", code, body)
	}
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.StatsSummary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Node.NodeName != "n1" || len(got.Pods) != 1 || *got.Pods[0].CPU.UsageNanoCores != cores || got.Pods[0].Containers[0].Name != "app" {
		t.Errorf("client summary = %+v", got)
	}

	none := httptest.NewServer(New(Config{}).Handler())
	defer none.Close()
	if code, body := get(t, none, http.MethodGet, "/stats/summary"); code != http.StatusNotImplemented {
		t.Errorf("without stats: %d %s, want 501", code, body)
	}
}
