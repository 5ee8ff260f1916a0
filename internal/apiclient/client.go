// Package apiclient is skiff's client of a Kubernetes API server (issue 16):
// client-go's REST layer over a scheme of only the groups a node agent
// uses (core/v1, coordination/v1, authentication/v1, authorization/v1,
// certificates/v1), with informers built from hand-written
// ListWatch functions. Not the clientset: any typed client links all of
// client-go's API groups (+24 MB RSS in skiff; see
// docs/decisions/0056-api-client-client-gos-rest-layer.md).
package apiclient

import (
	"context"
	"fmt"
	"sync/atomic"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certsv1 "k8s.io/api/certificates/v1"
	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Client talks to one API server. Create with New; safe for concurrent use.
type Client struct {
	core, coord, authn, authz, certs *rest.RESTClient
	params                           runtime.ParameterCodec
}

// Content types of requests (rest.Config.ContentType). JSON is skiff's
// default: protobuf, the kubelet's, cost the agent about 1 MB more RSS at
// 110 pods (the generated decoders' pages) for no measurable CPU saving
// (docs/decisions/0059-api-client-runs-kubelets-rate-limits.md).
const (
	ContentTypeJSON     = runtime.ContentTypeJSON
	ContentTypeProtobuf = runtime.ContentTypeProtobuf
)

// New builds the REST clients for /api/v1 and
// /apis/coordination.k8s.io/v1 on one shared transport. It connects to
// nothing. Bodies are sent as cfg.ContentType (default ContentTypeJSON);
// that type or JSON is accepted back.
func New(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiclient: scheme: %w", err)
	}
	if err := coordv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiclient: scheme: %w", err)
	}
	if err := authnv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiclient: scheme: %w", err)
	}
	if err := authzv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiclient: scheme: %w", err)
	}
	if err := certsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiclient: scheme: %w", err)
	}
	// ListOptions and the other options as query parameters, as
	// client-go's own scheme registers them.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiclient: %w", err)
	}
	restFor := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion, c.NegotiatedSerializer = apiPath, &gv, codecs.WithoutConversion()
		if c.ContentType == "" {
			c.ContentType = ContentTypeJSON
		}
		if c.AcceptContentTypes == "" && c.ContentType != ContentTypeJSON {
			c.AcceptContentTypes = c.ContentType + "," + ContentTypeJSON
		}
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	cl := &Client{params: runtime.NewParameterCodec(scheme)}
	if cl.core, err = restFor("/api", v1.SchemeGroupVersion); err != nil {
		return nil, fmt.Errorf("apiclient: core/v1: %w", err)
	}
	if cl.coord, err = restFor("/apis", coordv1.SchemeGroupVersion); err != nil {
		return nil, fmt.Errorf("apiclient: coordination/v1: %w", err)
	}
	if cl.authn, err = restFor("/apis", authnv1.SchemeGroupVersion); err != nil {
		return nil, fmt.Errorf("apiclient: authentication/v1: %w", err)
	}
	if cl.authz, err = restFor("/apis", authzv1.SchemeGroupVersion); err != nil {
		return nil, fmt.Errorf("apiclient: authorization/v1: %w", err)
	}
	if cl.certs, err = restFor("/apis", certsv1.SchemeGroupVersion); err != nil {
		return nil, fmt.Errorf("apiclient: certificates/v1: %w", err)
	}
	return cl, nil
}

// PodInformer returns an informer of the pods bound to node (the
// kubelet's `spec.nodeName` field selector), all namespaces. The caller
// runs it and waits for it.
func (c *Client) PodInformer(node string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	lw := selected(c.core.Get, "", "pods", sel, func() runtime.Object { return &v1.PodList{} }, c.params)
	inf := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	_ = inf.SetTransform(dropManagedFields) // fails only once the informer runs
	return inf
}

// NodeInformer returns an informer of the one Node name (a
// metadata.name field selector, which the Node authorizer allows a node
// for its own Node; the kubelet's node informer). The caller runs it and
// waits for it.
func (c *Client) NodeInformer(name string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := selected(c.core.Get, "", "nodes", sel, func() runtime.Object { return &v1.NodeList{} }, c.params)
	inf := cache.NewSharedIndexInformer(lw, &v1.Node{}, 0, cache.Indexers{})
	_ = inf.SetTransform(dropManagedFields) // fails only once the informer runs
	return inf
}

// dropManagedFields removes metadata.managedFields, which a node agent
// never reads (it patches status with a strategic merge, not by server-side
// apply) and which is a pod's largest metadata: every copy of the pod the
// agent keeps (the informer's cache, the worker's spec) is smaller without
// it. client-go's documented use of a TransformFunc.
func dropManagedFields(o any) (any, error) {
	if m, ok := o.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return o, nil
}

// ServiceInformer is an informer on the Services of every namespace (the
// kubelet's service lister, for the pods' service variables; the Node
// authorizer lets a node list and watch them). Only what the variables
// need is kept of each: namespace, name, cluster IP and ports; indexed by
// namespace.
func (c *Client) ServiceInformer() cache.SharedIndexInformer {
	// An API server that does not serve Services (skiff's control-plane
	// shim: no kube-proxy, no cluster IPs) answers 404 to the list: that
	// counts as an empty, synced list, or no pod would ever start (the
	// kubelet's "services have not yet been read").
	lw := tolerateNotServed(c.core.Get, "services", "", func() runtime.Object { return &v1.ServiceList{} }, c.params)
	inf := cache.NewSharedIndexInformer(lw, &v1.Service{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = inf.SetTransform(trimService) // fails only once the informer runs
	return inf
}

// ClusterTrustBundleInformer is an informer on the certificates.k8s.io/v1
// ClusterTrustBundles (cluster-scoped; the Node authorizer lets a node
// list and watch them), for projected clusterTrustBundle sources. An API
// server that does not serve them counts as having none.
func (c *Client) ClusterTrustBundleInformer() cache.SharedIndexInformer {
	lw := tolerateNotServed(c.certs.Get, "clustertrustbundles", "", func() runtime.Object { return &certsv1.ClusterTrustBundleList{} }, c.params)
	inf := cache.NewSharedIndexInformer(lw, &certsv1.ClusterTrustBundle{}, 0, cache.Indexers{})
	_ = inf.SetTransform(dropManagedFields) // fails only once the informer runs
	return inf
}

// selected lists and watches resource in namespace (all namespaces when
// empty) through get, with the field selector sel.
func selected(get func() *rest.Request, namespace, resource, sel string, newList func() runtime.Object, params runtime.ParameterCodec) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			l := newList()
			return l, get().Namespace(namespace).Resource(resource).VersionedParams(&o, params).Do(ctx).Into(l)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.Watch = sel, true
			return get().Namespace(namespace).Resource(resource).VersionedParams(&o, params).Watch(ctx)
		},
	}
}

// tolerateNotServed lists and watches resource (all namespaces; with the
// field selector sel unless empty) through get, counting a 404 (a resource the API server does not serve) as an
// empty list: the informer syncs. A 404 on the watch-list (client-go's
// first request) falls back to that list. The watch then waits quietly;
// a restart of the agent notices the resource served later.
func tolerateNotServed(get func() *rest.Request, resource, sel string, newList func() runtime.Object, params runtime.ParameterCodec) *cache.ListWatch {
	var notServed atomic.Bool
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if sel != "" {
				o.FieldSelector = sel
			}
			l := newList()
			err := get().Resource(resource).VersionedParams(&o, params).Do(ctx).Into(l)
			notServed.Store(apierrors.IsNotFound(err))
			if notServed.Load() {
				return newList(), nil
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if notServed.Load() {
				return watch.NewFake(), nil // stopped by the reflector
			}
			o.Watch = true
			if sel != "" {
				o.FieldSelector = sel
			}
			w, err := get().Resource(resource).VersionedParams(&o, params).Watch(ctx)
			if apierrors.IsNotFound(err) {
				notServed.Store(true)
			}
			return w, err
		},
	}
}

// trimService keeps of a Service only what the service variables need.
func trimService(o any) (any, error) {
	s, ok := o.(*v1.Service)
	if !ok {
		return o, nil
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion},
		Spec:       v1.ServiceSpec{ClusterIP: s.Spec.ClusterIP, Ports: s.Spec.Ports},
	}, nil
}

// CreateEvent posts ev in its namespace. Blocking.
func (c *Client) CreateEvent(ctx context.Context, ev *v1.Event) (*v1.Event, error) {
	out := &v1.Event{}
	return out, c.core.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Do(ctx).Into(out)
}

// UpdateLease replaces the lease l names. Blocking.
func (c *Client) UpdateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	out := &coordv1.Lease{}
	return out, c.coord.Put().Namespace(l.Namespace).Resource("leases").Name(l.Name).Body(l).Do(ctx).Into(out)
}

// GetNode reads the Node name. Blocking.
func (c *Client) GetNode(ctx context.Context, name string) (*v1.Node, error) {
	out := &v1.Node{}
	return out, c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(out)
}

// CreateNode registers n. Blocking.
func (c *Client) CreateNode(ctx context.Context, n *v1.Node) (*v1.Node, error) {
	out := &v1.Node{}
	return out, c.core.Post().Resource("nodes").Body(n).Do(ctx).Into(out)
}

// UpdateNode replaces n's metadata and spec (n.ResourceVersion is the
// precondition). Blocking.
func (c *Client) UpdateNode(ctx context.Context, n *v1.Node) (*v1.Node, error) {
	out := &v1.Node{}
	return out, c.core.Put().Resource("nodes").Name(n.Name).Body(n).Do(ctx).Into(out)
}

// UpdateNodeStatus replaces n's status (n.ResourceVersion is the
// precondition). Blocking.
func (c *Client) UpdateNodeStatus(ctx context.Context, n *v1.Node) (*v1.Node, error) {
	out := &v1.Node{}
	return out, c.core.Put().Resource("nodes").Name(n.Name).SubResource("status").Body(n).Do(ctx).Into(out)
}

// GetLease reads the lease namespace/name. Blocking.
func (c *Client) GetLease(ctx context.Context, namespace, name string) (*coordv1.Lease, error) {
	out := &coordv1.Lease{}
	return out, c.coord.Get().Namespace(namespace).Resource("leases").Name(name).Do(ctx).Into(out)
}

// CreateLease creates l. Blocking.
func (c *Client) CreateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	out := &coordv1.Lease{}
	return out, c.coord.Post().Namespace(l.Namespace).Resource("leases").Body(l).Do(ctx).Into(out)
}

// CreatePod creates p (a mirror pod). Blocking.
func (c *Client) CreatePod(ctx context.Context, p *v1.Pod) (*v1.Pod, error) {
	out := &v1.Pod{}
	return out, c.core.Post().Namespace(p.Namespace).Resource("pods").Body(p).Do(ctx).Into(out)
}

// PatchPodStatus applies a strategic merge patch to the status of pod
// namespace/name. Blocking.
func (c *Client) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	out := &v1.Pod{}
	return out, c.core.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("pods").Name(name).
		SubResource("status").Body(patch).Do(ctx).Into(out)
}

// DeletePod deletes pod namespace/name if its UID is uid, with grace
// seconds (nil: the pod's own). Blocking.
func (c *Client) DeletePod(ctx context.Context, namespace, name string, uid types.UID, grace *int64) error {
	opts := &metav1.DeleteOptions{GracePeriodSeconds: grace, Preconditions: &metav1.Preconditions{UID: &uid}}
	return c.core.Delete().Namespace(namespace).Resource("pods").Name(name).Body(opts).Do(ctx).Error()
}

// PatchEvent applies a strategic merge patch to the event namespace/name
// (a repeat's count and lastTimestamp). Blocking.
func (c *Client) PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*v1.Event, error) {
	out := &v1.Event{}
	return out, c.core.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("events").Name(name).
		Body(patch).Do(ctx).Into(out)
}

// CreateToken requests a token of the service account namespace/name
// (TokenRequest). Blocking.
func (c *Client) CreateToken(ctx context.Context, namespace, name string, tr *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	out := &authnv1.TokenRequest{}
	return out, c.core.Post().Namespace(namespace).Resource("serviceaccounts").Name(name).SubResource("token").
		Body(tr).Do(ctx).Into(out)
}

// ObjectInformer returns an informer of the one ConfigMap or Secret
// (resource "configmaps" or "secrets") namespace/name: a list and watch
// with a metadata.name field selector, which is all the Node authorizer
// lets a node read (the kubelet's watch-based object manager). The caller
// runs it and waits for it.
func (c *Client) ObjectInformer(resource, namespace, name string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	var obj runtime.Object
	newList := func() runtime.Object { return &v1.ConfigMapList{} }
	obj = &v1.ConfigMap{}
	if resource == "secrets" {
		newList, obj = func() runtime.Object { return &v1.SecretList{} }, &v1.Secret{}
	}
	lw := selected(c.core.Get, namespace, resource, sel, newList, c.params)
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
}

// CreateTokenReview asks the API server who a bearer token belongs to.
// Blocking.
func (c *Client) CreateTokenReview(ctx context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	out := &authnv1.TokenReview{}
	return out, c.authn.Post().Resource("tokenreviews").Body(tr).Do(ctx).Into(out)
}

// CreateSubjectAccessReview asks the API server whether a user may do
// something. Blocking.
func (c *Client) CreateSubjectAccessReview(ctx context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	out := &authzv1.SubjectAccessReview{}
	return out, c.authz.Post().Resource("subjectaccessreviews").Body(sar).Do(ctx).Into(out)
}

// CreateCSR creates a CertificateSigningRequest. Blocking.
func (c *Client) CreateCSR(ctx context.Context, csr *certsv1.CertificateSigningRequest) (*certsv1.CertificateSigningRequest, error) {
	out := &certsv1.CertificateSigningRequest{}
	return out, c.certs.Post().Resource("certificatesigningrequests").Body(csr).Do(ctx).Into(out)
}

// GetCSR reads the CertificateSigningRequest name. Blocking.
func (c *Client) GetCSR(ctx context.Context, name string) (*certsv1.CertificateSigningRequest, error) {
	out := &certsv1.CertificateSigningRequest{}
	return out, c.certs.Get().Resource("certificatesigningrequests").Name(name).Do(ctx).Into(out)
}
