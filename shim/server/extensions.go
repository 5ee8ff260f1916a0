package server

import (
	"fmt"
	"slices"

	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/informers"
)

// newDelegate returns the server the shim delegates to: the one
// build (Options.Extensions) makes from a copy of cfg, or the empty
// delegate without build. The two share cfg's aggregated discovery
// manager, so that the shim's /apis lists the delegate's groups too
// (kube-apiserver's aggregator does so there), in the legacy form as well
// (withLegacyDelegateGroups).
func newDelegate(cfg *genericapiserver.Config, backend storagebackend.Config, factory informers.SharedInformerFactory,
	build func(ExtensionsConfig) (genericapiserver.DelegationTarget, error)) (genericapiserver.DelegationTarget, error) {
	if build == nil {
		return genericapiserver.NewEmptyDelegate(), nil
	}
	if cfg.AggregatedDiscoveryGroupManager == nil {
		cfg.AggregatedDiscoveryGroupManager = discoveryendpoint.NewResourceManager("apis")
	}
	ext := ExtensionsConfig{Config: *cfg, Storage: backend, Informers: factory}
	withLegacyDelegateGroups(cfg) // the shim's chain only
	// kube-apiserver's CreateAPIExtensionsConfig does the same: hooks
	// would be added twice, and the delegate has storage of its own.
	ext.Config.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	ext.Config.RESTOptionsGetter = nil
	ext.Config.OpenAPIConfig, ext.Config.OpenAPIV3Config = nil, nil
	// The copy shares the checks' backing arrays: clipped, an append by
	// either server gets an array of its own instead of overwriting the
	// other's next element.
	ext.Config.HealthzChecks = slices.Clip(ext.Config.HealthzChecks)
	ext.Config.LivezChecks = slices.Clip(ext.Config.LivezChecks)
	ext.Config.ReadyzChecks = slices.Clip(ext.Config.ReadyzChecks)
	d, err := build(ext)
	if err != nil {
		return nil, fmt.Errorf("extensions server: %w", err)
	}
	return d, nil
}
