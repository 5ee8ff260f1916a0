package server

import (
	"crypto/x509"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiffnode/skiff/internal/metrics"
)

// TestMetricsStub checks that /metrics exists without Config.Metrics, as
// the kubelet's, with an empty Prometheus exposition.
func TestMetricsStub(t *testing.T) {
	rec := httptest.NewRecorder()
	New(Config{}).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("GET /metrics = %d %q (%s), want 200, empty, text/plain version 0.0.4", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
	}
}

// testMetricsHandler is the agent's /metrics handler for node1 (the
// kubelet's metrics on a registry of their own).
func testMetricsHandler(t *testing.T) *Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Options{NodeName: "node1", NoProcessCollectors: true}); err != nil {
		t.Fatal(err)
	}
	return New(Config{Metrics: metrics.Handler(reg, nil)})
}

// TestMetricsServed: with Config.Metrics, GET /metrics (the unix socket's
// and the read-only port's handler) answers the kubelet's metrics in the
// text format; other methods are refused.
func TestMetricsServed(t *testing.T) {
	s := testMetricsHandler(t)
	tests := []struct {
		method   string
		wantCode int
		wantBody string
	}{
		{"GET", 200, `kubelet_node_name{node="node1"} 1`},
		{"HEAD", 200, ""},
		{"POST", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(tt.method, "/metrics", nil))
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("%s /metrics = %d %q, want %d with %q", tt.method, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if ct := rec.Header().Get("Content-Type"); tt.wantCode == 200 && !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
				t.Errorf("content type %q, want text/plain; version=0.0.4", ct)
			}
		})
	}
}

// TestMetricsAuthorized: on the kubelet API (the handler ServeTLS serves,
// behind Auth) /metrics is authorized as the nodes/metrics subresource;
// without that permission nothing of the metrics is served.
func TestMetricsAuthorized(t *testing.T) {
	s := testMetricsHandler(t)
	tests := []struct {
		name     string
		allow    map[string]bool
		wantCode int
		wantBody string
	}{
		{"allowed", map[string]bool{"metrics": true}, 200, `kubelet_node_name{node="node1"} 1`},
		{"proxy is not enough", map[string]bool{"proxy": true}, 403,
			"Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[metrics])\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authn, err := NewAuthenticator(AuthnConfig{Anonymous: true, ClientCAs: x509.NewCertPool()})
			if err != nil {
				t.Fatal(err)
			}
			authz := &subresourceAuthorizer{allow: tt.allow}
			h := (&Auth{Authenticator: authn, Authorizer: authz, NodeName: "node1"}).Wrap(s.Handler())
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("GET /metrics = %d %q, want %d with %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if tt.wantCode != 200 && strings.Contains(rec.Body.String(), "kubelet_") {
				t.Errorf("forbidden request got metrics: %q", rec.Body.String())
			}
			if want := []string{"system:anonymous get metrics"}; !reflect.DeepEqual(authz.asked, want) {
				t.Errorf("authorizer asked %q, want %q", authz.asked, want)
			}
		})
	}
}
