package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/skiffnode/skiff/shim/scheme"
)

// aggregatedAccept asks /apis for the aggregated discovery document.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// withLegacyDelegateGroups makes cfg's handler chain answer GET /apis in
// the legacy form (an APIGroupList, for clients before aggregated
// discovery) with the delegate's groups too (apiextensions.k8s.io and the
// CRDs' groups): the generic server's own list knows only the shim's, and
// kube-apiserver's aggregator, which merges them there, is not run. The
// groups come from the aggregated discovery document, which both servers
// share (newDelegate), in its order, its first version preferred.
func withLegacyDelegateGroups(cfg *genericapiserver.Config) {
	build := cfg.BuildHandlerChainFunc
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return build(legacyAPIs(h), c)
	}
}

// legacyAPIs serves legacy GETs of /apis from next's legacy and
// aggregated documents, merged; every other request is next's.
func legacyAPIs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/apis" || req.Method != http.MethodGet || strings.Contains(req.Header.Get("Accept"), "as=APIGroupDiscoveryList") {
			next.ServeHTTP(w, req)
			return
		}
		var own metav1.APIGroupList
		var all apidiscoveryv2.APIGroupDiscoveryList
		for _, q := range []struct {
			accept string
			into   any
		}{{"application/json", &own}, {aggregatedAccept, &all}} {
			if err := getJSON(next, req, q.accept, q.into); err != nil {
				responsewriters.InternalError(w, req, err)
				return
			}
		}
		list := mergeGroups(own, all)
		responsewriters.WriteObjectNegotiated(scheme.Codecs.WithoutConversion(), negotiation.DefaultEndpointRestrictions,
			schema.GroupVersion{}, w, req, http.StatusOK, &list, false)
	})
}

// getJSON decodes into out next's answer to req with accept.
func getJSON(next http.Handler, req *http.Request, accept string, out any) error {
	r := req.Clone(req.Context())
	r.Header.Set("Accept", accept)
	// A plain, whole answer: neither gzipped nor 304 Not Modified.
	for _, h := range []string{"Accept-Encoding", "If-None-Match", "If-Modified-Since"} {
		r.Header.Del(h)
	}
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("/apis (%s): %d %s", accept, rec.Code, rec.Body.String())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		return fmt.Errorf("/apis (%s): %w", accept, err)
	}
	return nil
}

// mergeGroups is own with the groups of all it lacks appended, each with
// own's first server addresses. Pure.
func mergeGroups(own metav1.APIGroupList, all apidiscoveryv2.APIGroupDiscoveryList) metav1.APIGroupList {
	known := map[string]bool{}
	var addrs []metav1.ServerAddressByClientCIDR
	for _, g := range own.Groups {
		known[g.Name] = true
		if addrs == nil {
			addrs = g.ServerAddressByClientCIDRs
		}
	}
	for _, g := range all.Items {
		if known[g.Name] || g.Name == "" || len(g.Versions) == 0 {
			continue
		}
		group := metav1.APIGroup{Name: g.Name, ServerAddressByClientCIDRs: addrs}
		for _, v := range g.Versions {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g.Name + "/" + v.Version, Version: v.Version})
		}
		group.PreferredVersion = group.Versions[0]
		own.Groups = append(own.Groups, group)
	}
	own.Kind, own.APIVersion = "APIGroupList", "v1"
	return own
}
