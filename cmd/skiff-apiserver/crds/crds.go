// Package crds serves CustomResourceDefinitions and their custom
// resources in skiff-apiserver: upstream's apiextensions-apiserver
// (k8s.io/apiextensions-apiserver), built as kube-apiserver builds it
// (pkg/controlplane/apiserver's CreateAPIExtensionsConfig), as the server
// the shim delegates to (decision 115).
package crds

import (
	"fmt"
	"net/url"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/apiserver/pkg/util/webhook"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiffnode/skiff/shim/server"
)

// Server builds the apiextensions server for server.Options.Extensions:
// CustomResourceDefinitions (apiextensions.k8s.io/v1) stored in the
// shim's etcd under its prefix, as kube-apiserver stores them, and their
// custom resources, with upstream's controllers (naming, establishing,
// finalizer, non-structural schema, API approval, discovery). Conversion
// webhooks reach Services through their cluster IPs.
func Server(ext server.ExtensionsConfig) (genericapiserver.DelegationTarget, error) {
	etcd := options.NewEtcdOptions(&ext.Storage)
	// kube-apiserver's: CRDs stored as v1beta1 (the more compact form,
	// issue 82292), read as either.
	etcd.StorageConfig.Codec = apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion)
	etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(apiextensionsv1beta1.SchemeGroupVersion,
		schema.GroupKind{Group: apiextensionsv1beta1.GroupName})
	etcd.SkipHealthEndpoints = true // the shim's etcd check covers it
	cfg := ext.Config
	if err := etcd.ApplyTo(&cfg); err != nil {
		return nil, fmt.Errorf("apiextensions storage: %w", err)
	}
	cfg.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()
	// The CRD handler builds its type models from it (its own OpenAPI
	// document is not served: the shim answers /openapi first).
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(
		openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions),
		openapinamer.NewDefinitionNamer(apiextensionsapiserver.Scheme))
	c := &apiextensionsapiserver.Config{
		GenericConfig: &genericapiserver.RecommendedConfig{Config: cfg, SharedInformerFactory: ext.Informers},
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: apiextensionsoptions.NewCRDRESTOptionsGetter(*etcd, cfg.ResourceTransformers, cfg.StorageObjectCountTracker),
			MasterCount:          1,
			ServiceResolver:      serviceResolver{ext.Informers.Core().V1().Services().Lister()},
			AuthResolverWrapper: webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, cfg.LoopbackClientConfig,
				noopoteltrace.NewTracerProvider()),
		},
	}
	s, err := c.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	return s.GenericAPIServer, nil
}

// serviceResolver finds a conversion webhook's Service by its cluster IP,
// as kube-apiserver's aggregator resolver does.
type serviceResolver struct {
	services corelisters.ServiceLister
}

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveCluster(r.services, namespace, name, port)
}
