package server

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	nodeauthz "github.com/skiffnode/skiff/shim/authz/node"
)

// nodeGraph is what the Node authorizer reads its graph's edges through.
type nodeGraph struct {
	pods nodeauthz.Pods
	// volumes is nil when no PersistentVolumes are served: the
	// authorizer then refuses every one.
	volumes nodeauthz.Volumes
}

// nodeGraph returns the Node authorizer's ports over st's Stores.
func (st *apiStorage) nodeGraph() nodeGraph {
	g := nodeGraph{pods: storePods{st.pods}}
	if st.volumes != nil {
		g.volumes = storeVolumes{st.volumes}
	}
	return g
}

// storePods answers the Node authorizer's "pods bound to a node" (its
// graph's pod -> node edges) by listing the pods Store in-process: one
// namespace, a spec.nodeName field selector, resourceVersion "" (a
// consistent read, which k8s.io/apiserver 1.34 serves from the Store's
// watch cache once that cache has caught up with etcd's current revision).
//
// Why not upstream's graph, or an informer: both keep a second copy of
// every pod (upstream's graph the pods' references, an informer the pods)
// beside the watch cache the Store already holds, and must be synced
// before they answer; RSS is the shim's budget (< 80 MB at 110 pods). A
// check costs one filter over the namespace's pods in the watch cache
// (the cache keeps each pod's selectable fields, so no decoding) and
// allocates only the result; it runs for the few requests the authorizer
// relates to pods (gets of secrets, configmaps, claims, service accounts
// and pods; token requests), not for the kubelet's pod list and watch,
// which its field selector authorizes. Safe for concurrent use; blocks
// until the watch cache is fresh.
type storePods struct {
	pods rest.Lister
}

// PodsOnNode implements nodeauthz.Pods.
func (s storePods) PodsOnNode(ctx context.Context, namespace, node string) ([]*corev1.Pod, error) {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	opts := &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node)}
	obj, err := s.pods.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*corev1.PodList)
	if !ok {
		return nil, fmt.Errorf("pods list is a %T", obj)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// storeVolumes answers the Node authorizer's "claim of a PersistentVolume"
// (its graph's pv -> pvc edges) by reading the volume from its Store
// in-process: resourceVersion "", a read from etcd, once per get of a
// PersistentVolume by a node (once per pod start with a claim). Safe for
// concurrent use.
type storeVolumes struct {
	volumes rest.Getter
}

// PersistentVolume implements nodeauthz.Volumes: (nil, nil) when there
// is no such volume.
func (s storeVolumes) PersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	obj, err := s.volumes.Get(genericapirequest.WithNamespace(ctx, ""), name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return nil, fmt.Errorf("persistent volume is a %T", obj)
	}
	return pv, nil
}
