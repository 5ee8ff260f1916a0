package server

import (
	"testing"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// TestDelegateChecksOwnTheirArrays: the delegate's copy of the shim's
// configuration and the shim's own append health checks without
// overwriting each other's (the copy shares the backing arrays).
func TestDelegateChecksOwnTheirArrays(t *testing.T) {
	cfg := &genericapiserver.Config{HealthzChecks: make([]healthz.HealthChecker, 1, 4)}
	cfg.HealthzChecks[0] = healthz.NamedCheck("shared", nil)
	var ext []healthz.HealthChecker
	build := func(e ExtensionsConfig) (genericapiserver.DelegationTarget, error) {
		ext = append(e.Config.HealthzChecks, healthz.NamedCheck("delegate", nil))
		return genericapiserver.NewEmptyDelegate(), nil
	}
	if _, err := newDelegate(cfg, storagebackend.Config{}, nil, build); err != nil {
		t.Fatal(err)
	}
	cfg.HealthzChecks = append(cfg.HealthzChecks, healthz.NamedCheck("shim", nil))
	if got := ext[1].Name(); got != "delegate" {
		t.Errorf("the delegate's second check is %q, want delegate", got)
	}
	if got := cfg.HealthzChecks[1].Name(); got != "shim" {
		t.Errorf("the shim's second check is %q, want shim", got)
	}
}
