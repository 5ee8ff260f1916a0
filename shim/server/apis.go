package server

import (
	"fmt"
	"maps"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericregistry "k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/shim/registry/apps"
	"github.com/skiffnode/skiff/shim/registry/core"
	"github.com/skiffnode/skiff/shim/registry/generic"
	"github.com/skiffnode/skiff/shim/registry/namespace"
	"github.com/skiffnode/skiff/shim/registry/pod"
	"github.com/skiffnode/skiff/shim/registry/service"
	"github.com/skiffnode/skiff/shim/scheme"
)

// apiStorage is the REST storage of every served kind by API group and
// resource, built before the server so that the Node authorizer can read
// pods (and PersistentVolumes) through their Stores.
type apiStorage struct {
	byGroup map[string]map[string]rest.Storage
	// pods is the pods' main Store.
	pods rest.Lister
	// volumes is the PersistentVolumes' main Store; nil unless a build
	// serves them (Options.Kinds).
	volumes rest.Getter
}

// newAPIStorage builds every served kind's Store (each starts its watch
// cache on etcd) through optsGetter; the pods' log, exec, attach and
// portforward subresources reach kubelets through kubelets. extra are
// served beside the shim's own kinds (Options.Kinds).
func newAPIStorage(optsGetter genericregistry.RESTOptionsGetter, kubelets kubeletAccess, extra []*generic.Kind) (*apiStorage, error) {
	st := &apiStorage{byGroup: map[string]map[string]rest.Storage{}}
	kinds := append(append(append([]*generic.Kind{pod.Kind}, core.All...), apps.All...), extra...)
	for _, k := range kinds {
		e, err := generic.NewEndpoints(k, optsGetter)
		if err != nil {
			return nil, err
		}
		if st.byGroup[k.Group] == nil {
			st.byGroup[k.Group] = map[string]rest.Storage{}
		}
		st.byGroup[k.Group][k.Resource] = e.Main
		if e.Status != nil {
			st.byGroup[k.Group][k.Resource+"/status"] = e.Status
		}
		if e.Scale != nil {
			st.byGroup[k.Group][k.Resource+"/scale"] = e.Scale
		}
		for name, sub := range e.Subresources {
			st.byGroup[k.Group][k.Resource+"/"+name] = sub
		}
		switch {
		case k == pod.Kind:
			st.pods = e.Main
		case k.Group == "" && k.Resource == "persistentvolumes":
			st.volumes = e.Main
		}
	}
	if err := addNamespaces(st.byGroup[""], optsGetter); err != nil {
		return nil, err
	}
	if err := addPodSubresources(st.byGroup[""], kubelets); err != nil {
		return nil, err
	}
	if err := addEviction(st.byGroup); err != nil {
		return nil, err
	}
	addServiceProxy(st)
	return st, nil
}

// addServiceProxy adds services/proxy when Services and EndpointSlices
// are served (Options.Kinds).
func addServiceProxy(st *apiStorage) {
	services, ok1 := st.byGroup[""]["services"].(rest.Getter)
	slices, ok2 := st.byGroup[discoveryv1.GroupName]["endpointslices"].(rest.Lister)
	pods, ok3 := st.byGroup[""]["pods"].(rest.Getter)
	if ok1 && ok2 && ok3 {
		st.byGroup[""]["services/proxy"] = service.NewProxyREST(services, pods, slices, pod.NewProxyTransport())
	}
}

// installAPIs installs every served kind, grouped by API group: the core
// group, then every other group in one InstallAPIGroups call, as
// kube-apiserver does, so that they share one set of OpenAPI models for
// their field managers instead of building one per group (shim/NOTES.md,
// Measurements).
func installAPIs(g *genericapiserver.GenericAPIServer, st *apiStorage) error {
	var groups []*genericapiserver.APIGroupInfo
	for _, groupName := range slices.Sorted(maps.Keys(st.byGroup)) {
		info := genericapiserver.NewDefaultAPIGroupInfo(groupName, scheme.Scheme, scheme.ParameterCodec, scheme.Codecs)
		info.VersionedResourcesStorageMap["v1"] = st.byGroup[groupName]
		if groupName != "" {
			groups = append(groups, &info)
			continue
		}
		if err := g.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &info); err != nil {
			return fmt.Errorf("install the core API group: %w", err)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	if err := g.InstallAPIGroups(groups...); err != nil {
		return fmt.Errorf("install API groups: %w", err)
	}
	return nil
}

// addNamespaces adds namespaces, namespaces/status and namespaces/finalize
// (shim/registry/namespace) to the core group's storage.
func addNamespaces(storage map[string]rest.Storage, optsGetter genericregistry.RESTOptionsGetter) error {
	main, status, finalize, err := namespace.NewREST(optsGetter)
	if err != nil {
		return err
	}
	storage["namespaces"] = main
	storage["namespaces/status"] = status
	storage["namespaces/finalize"] = finalize
	return nil
}

// systemNamespaces exist from the start, as on any cluster.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// systemNamespacesHook creates the system namespaces through the loopback
// client once the server serves.
func systemNamespacesHook(hc genericapiserver.PostStartHookContext) error {
	client, err := kubernetes.NewForConfig(hc.LoopbackClientConfig)
	if err != nil {
		return err
	}
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := client.CoreV1().Namespaces().Create(hc.Context, ns, metav1.CreateOptions{})
		if hc.Err() != nil {
			// The server is stopping (a failed hook would end the
			// process): the next start creates the rest.
			return nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
}
