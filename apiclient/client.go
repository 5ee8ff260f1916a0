// Package apiclient is skiff's client of a Kubernetes API server (issue 16):
// client-go's REST layer over a scheme of only the groups a node agent
// uses (core/v1, coordination/v1), with informers built from hand-written
// ListWatch functions. Not the clientset: any typed client links all of
// client-go's API groups (+24 MB RSS in skiff; ARCHITECTURE.md, "The API
// client").
package apiclient

import (
	"context"
	"fmt"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Client talks to one API server. Create with New; safe for concurrent use.
type Client struct {
	core, coord *rest.RESTClient
	params      runtime.ParameterCodec
}

// New builds the REST clients for /api/v1 and
// /apis/coordination.k8s.io/v1 on one shared transport. It connects to
// nothing.
func New(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiclient: scheme: %w", err)
	}
	if err := coordv1.AddToScheme(scheme); err != nil {
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
	return cl, nil
}

// PodInformer returns an informer of the pods bound to node (the
// kubelet's `spec.nodeName` field selector), all namespaces. The caller
// runs it and waits for it.
func (c *Client) PodInformer(node string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			l := &v1.PodList{}
			return l, c.core.Get().Resource("pods").VersionedParams(&o, c.params).Do(ctx).Into(l)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.Watch = sel, true
			return c.core.Get().Resource("pods").VersionedParams(&o, c.params).Watch(ctx)
		},
	}
	return cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
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
