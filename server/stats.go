package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// StatsProvider gives the server the resource usage of the node's pods.
type StatsProvider interface {
	// StatsSummary returns the pods' and containers' cpu and memory usage
	// in the kubelet's summary API shape. It may block for a moment (the
	// agent measures cpu rates over a second when it has no recent sample),
	// at most until ctx is done. Safe for concurrent use.
	StatsSummary(ctx context.Context) *statsapi.Summary
}

// handleStats serves GET /stats/summary: 501 without a StatsProvider.
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	if s.stats == nil {
		http.Error(w, "stats are not available (no pod cgroups)", http.StatusNotImplemented)
		return
	}
	writeJSON(w, s.log, s.stats.StatsSummary(r.Context()))
}

// StatsSummary returns the node's resource usage (GET /stats/summary).
func (c *Client) StatsSummary(ctx context.Context) (*statsapi.Summary, error) {
	resp, err := c.get(ctx, "/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var sum statsapi.Summary
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		return nil, fmt.Errorf("decode stats summary: %w", err)
	}
	return &sum, nil
}

// emptyMetrics serves GET /metrics without Config.Metrics: an empty
// Prometheus exposition, so that the path exists (the kubelet's; scrapers
// and the authorizer's "metrics" subresource find it).
func emptyMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", promContentType)
	w.WriteHeader(http.StatusOK)
}
