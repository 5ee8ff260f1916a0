package pod

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ProxyREST is pods/proxy: HTTP(S) requests, upgrades included, proxied
// to the pod's IP (upstream's ProxyREST and pod.ResourceLocation,
// pkg/registry/core/pod): the name is "pod", "pod:port" or
// "scheme:pod:port"; without a port, the first container port of the
// pod's containers, else the scheme's.
type ProxyREST struct {
	pods      rest.Getter
	transport http.RoundTripper
}

// NewProxyREST returns pods/proxy reading pods through pods.
func NewProxyREST(pods rest.Getter) *ProxyREST {
	return &ProxyREST{pods: pods, transport: NewProxyTransport()}
}

// NewProxyTransport is kube-apiserver's transport to pods and services
// (CreateProxyTransport): by IP, so their certificates are not verified.
func NewProxyTransport() *http.Transport {
	return utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}) //nolint:gosec // upstream's: pods are reached by IP
}

// ProxyMethods are the methods pods/proxy and services/proxy take
// (upstream's proxyMethods).
func ProxyMethods() []string {
	return []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
}

// ProxyHandler proxies to loc with path appended, through transport, as
// upstream's proxy subresources do (URLs in responses rewritten, upgrades
// passed through, errors to responder).
func ProxyHandler(loc *url.URL, path string, transport http.RoundTripper, responder rest.Responder) http.Handler {
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, path)
	return proxy.NewUpgradeAwareHandler(loc, transport, true, false, proxy.NewErrorResponder(responder))
}

var _ rest.Connecter = &ProxyREST{}

// New implements rest.Storage.
func (r *ProxyREST) New() runtime.Object { return &corev1.PodProxyOptions{} }

// Destroy implements rest.Storage.
func (r *ProxyREST) Destroy() {}

// ConnectMethods implements rest.Connecter.
func (r *ProxyREST) ConnectMethods() []string { return ProxyMethods() }

// NewConnectOptions implements rest.Connecter: the subpath is the path.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodProxyOptions{}, true, "path"
}

// Connect implements rest.Connecter, as upstream's: a pod without a
// global unicast IP is a 400 "address not allowed".
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	loc, err := r.location(ctx, id)
	if err != nil {
		return nil, err
	}
	return ProxyHandler(loc, o.Path, r.transport, responder), nil
}

// location is upstream's pod.ResourceLocation.
func (r *ProxyREST) location(ctx context.Context, id string) (*url.URL, error) {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	pod, err := getPod(ctx, r.pods, name)
	if err != nil {
		return nil, err
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	podIP := pod.Status.PodIP // upstream's getPodIP: the first of podIPs
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	ip := net.ParseIP(podIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	loc := &url.URL{Scheme: scheme, Host: podIP}
	if ip.To4() == nil {
		loc.Host = "[" + podIP + "]"
	}
	if port != "" {
		loc.Host = net.JoinHostPort(podIP, port)
	}
	return loc, nil
}
