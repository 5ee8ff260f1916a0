package server

import (
	"net/http"
	"sync"

	apiopenapi "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"

	"github.com/skiffnode/skiff/shim/openapi"
	"github.com/skiffnode/skiff/shim/scheme"
)

// applyOpenAPI configures /openapi/v2 and /openapi/v3 from the committed
// definitions (shim/openapi); k8s.io/apiserver needs the v3 ones to build
// server-side apply's type converter. The server does not install the
// handlers itself (SkipOpenAPIInstallation): installLazyOpenAPI does,
// after the APIs.
func applyOpenAPI(cfg *genericapiserver.Config) {
	namer := apiopenapi.NewDefinitionNamer(scheme.External())
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "Kubernetes"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "Kubernetes"
	cfg.SkipOpenAPIInstallation = true
}

// installLazyOpenAPI serves /openapi/v2 and /openapi/v3 (and its group
// documents) as PrepareRun would, but builds each spec at its first
// request rather than at start. Built eagerly, the v2 spec held ~5 MB of
// heap and the v3 specs ~2 MB (shim/NOTES.md, Measurements) in every
// shim, though neither the agent nor client-go reads them: kubectl
// fetches v3 (explain, apply, field validation), v2 only as a fallback.
// Must be called once every API group is installed: the specs are built
// from the routes registered then.
func installLazyOpenAPI(g *genericapiserver.GenericAPIServer, cfg *genericapiserver.Config) {
	container, target := g.Handler.GoRestfulContainer, g.Handler.NonGoRestfulMux
	v2 := lazyHandler(func(m *mux.PathRecorderMux) {
		routes.OpenAPI{Config: cfg.OpenAPIConfig}.InstallV2(container, m)
	})
	target.Handle("/openapi/v2", v2)
	v3 := lazyHandler(func(m *mux.PathRecorderMux) {
		routes.OpenAPI{V3Config: cfg.OpenAPIV3Config}.InstallV3(container, m)
	})
	target.Handle("/openapi/v3", v3)
	target.HandlePrefix("/openapi/v3/", v3)
}

// lazyHandler is a handler that runs install on a mux of its own at its
// first request, then serves every request from that mux.
func lazyHandler(install func(*mux.PathRecorderMux)) http.Handler {
	var once sync.Once
	m := mux.NewPathRecorderMux("skiff-openapi")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { install(m) })
		m.ServeHTTP(w, r)
	})
}
