package apiclient

import (
	"context"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// GetServiceAccount reads the service account namespace/name (the Node
// authorizer allows those of the node's pods). Blocking.
func (c *Client) GetServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	out := &v1.ServiceAccount{}
	return out, c.core.Get().Namespace(namespace).Resource("serviceaccounts").Name(name).Do(ctx).Into(out)
}

// CreatePodCertificateRequest creates pcr in its namespace. Blocking.
func (c *Client) CreatePodCertificateRequest(ctx context.Context, pcr *certsv1.PodCertificateRequest) (*certsv1.PodCertificateRequest, error) {
	out := &certsv1.PodCertificateRequest{}
	return out, c.certs.Post().Namespace(pcr.Namespace).Resource("podcertificaterequests").Body(pcr).Do(ctx).Into(out)
}

// PodCertificateRequestInformer is an informer on the PodCertificateRequests
// of node's pods, all namespaces: the kubelet's `spec.nodeName` field
// selector, the only list the Node authorizer allows. An API server that
// does not serve them counts as having none.
func (c *Client) PodCertificateRequestInformer(node string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	lw := tolerateNotServed(c.certs.Get, "podcertificaterequests", sel, func() runtime.Object { return &certsv1.PodCertificateRequestList{} }, c.params)
	inf := cache.NewSharedIndexInformer(lw, &certsv1.PodCertificateRequest{}, 0, cache.Indexers{})
	_ = inf.SetTransform(dropManagedFields) // fails only once the informer runs
	return inf
}
