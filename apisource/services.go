package apisource

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffnode/skiff/internal/envvars"
)

// errServicesNotRead is the kubelet's error while its service lister has
// not synced.
var errServicesNotRead = errors.New("services have not yet been read at least once, cannot construct envvars")

// ServiceEnv gives pods their service environment variables from the API
// server's Services (agent.ServiceEnv, G.4), as the kubelet's service
// lister does: an informer on the Services of every namespace, indexed by
// namespace (apiclient's ServiceInformer). Safe for concurrent use.
type ServiceEnv struct {
	informer cache.SharedIndexInformer
	// Offline, when set before use, saves the variables each container
	// gets, and gives the saved ones while the Services are not listed
	// and the pods run from the copy.
	Offline *OfflineCopy
}

// NewServiceEnv returns the service variables of inf's Services; Run
// runs inf.
func NewServiceEnv(inf cache.SharedIndexInformer) *ServiceEnv { return &ServiceEnv{informer: inf} }

// Run runs the informer until ctx is done. Blocking.
func (s *ServiceEnv) Run(ctx context.Context) { s.informer.RunWithContext(ctx) }

// ServiceEnv implements agent.ServiceEnv: the kubernetes service of the
// default namespace and, with links, namespace's services. Non-blocking;
// an error until the informer has listed the Services once, but while the
// pods run from the offline copy: then the variables the copy saved (none
// if it has none).
func (s *ServiceEnv) ServiceEnv(namespace string, links bool) ([]v1.EnvVar, error) {
	if !s.informer.HasSynced() {
		if s.Offline.Active() {
			env, _ := s.Offline.serviceEnv(namespace, links)
			return env, nil
		}
		return nil, errServicesNotRead
	}
	idx := s.informer.GetIndexer()
	var all []*v1.Service
	if links {
		objs, err := idx.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
		all = appendServices(all, objs...)
	}
	if o, ok, _ := idx.GetByKey(v1.NamespaceDefault + "/kubernetes"); ok {
		all = appendServices(all, o)
	}
	env := envvars.FromServices(envvars.Select(all, namespace, links))
	s.Offline.saveServiceEnv(namespace, links, env)
	return env, nil
}

func appendServices(all []*v1.Service, objs ...any) []*v1.Service {
	for _, o := range objs {
		if s, ok := o.(*v1.Service); ok {
			all = append(all, s)
		}
	}
	return all
}
