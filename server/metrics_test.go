package server

import (
	"net/http/httptest"
	"testing"
)

// TestMetricsStub checks that /metrics exists, as the kubelet's, with an
// empty Prometheus exposition until skiff exports metrics.
func TestMetricsStub(t *testing.T) {
	rec := httptest.NewRecorder()
	New(Config{}).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("GET /metrics = %d %q (%s), want 200, empty, text/plain version 0.0.4", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
	}
}
