package pod

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/registry/rest"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Subresources are pods/log, pods/exec, pods/attach and pods/portforward,
// proxied to the kubelet API of the pod's node (upstream's
// pkg/registry/core/pod/rest/{log.go,subresources.go}).
type Subresources struct {
	Log         *LogREST
	Exec        *StreamREST
	Attach      *StreamREST
	PortForward *StreamREST
}

// NewSubresources returns the subresources reading pods through pods and
// reaching kubelets through k.
func NewSubresources(pods rest.Getter, k *Kubelets) Subresources {
	return Subresources{
		Log:         &LogREST{pods: pods, kubelets: k},
		Exec:        &StreamREST{pods: pods, kubelets: k, kind: "exec"},
		Attach:      &StreamREST{pods: pods, kubelets: k, kind: "attach"},
		PortForward: &StreamREST{pods: pods, kubelets: k, kind: "portforward"},
	}
}

// LogREST is pods/log: a GET streamed from the kubelet's
// /containerLogs/{namespace}/{pod}/{container}.
type LogREST struct {
	pods     rest.Getter
	kubelets *Kubelets
}

var (
	_ rest.GetterWithOptions = &LogREST{}
	_ rest.StorageMetadata   = &LogREST{}
)

// New implements rest.Storage.
func (r *LogREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy implements rest.Storage; the pods' Store owns the storage.
func (r *LogREST) Destroy() {}

// ProducesMIMETypes implements rest.StorageMetadata: text/plain, which the
// default list lacks (upstream's log.go).
func (r *LogREST) ProducesMIMETypes(string) []string { return []string{"text/plain"} }

// ProducesObject implements rest.StorageMetadata: a string.
func (r *LogREST) ProducesObject(string) any { return "" }

// NewGetOptions implements rest.GetterWithOptions.
func (r *LogREST) NewGetOptions() (runtime.Object, bool, string) {
	return &corev1.PodLogOptions{}, false, ""
}

// Get returns a stream of the container's log, as upstream's LogREST.Get
// and LogLocation: invalid options are a 422 (PodLogOptions), a missing
// or ambiguous container a 400; a pod without a node has no log yet and
// streams nothing (the handler answers 204, as kube-apiserver).
func (r *LogREST) Get(ctx context.Context, name string, opts runtime.Object) (runtime.Object, error) {
	logOpts, ok := opts.(*corev1.PodLogOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	if errs := validateLogOptions(logOpts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	pod, err := getPod(ctx, r.pods, name)
	if err != nil {
		return nil, err
	}
	container, err := validateContainer(logOpts.Container, pod)
	if err != nil {
		return nil, err
	}
	streamer := &genericrest.LocationStreamer{
		ContentType:     "text/plain",
		Flush:           logOpts.Follow,
		ResponseChecker: genericrest.NewGenericHttpResponseChecker(schema.GroupResource{Resource: "pods/log"}, name),
		RedirectChecker: genericrest.PreventRedirects,
	}
	if pod.Spec.NodeName == "" {
		return streamer, nil
	}
	path := fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container)
	if streamer.Location, err = r.kubelets.kubeletURL(ctx, pod.Spec.NodeName, path, logQuery(logOpts)); err != nil {
		return nil, err
	}
	streamer.Transport = r.kubelets.Transport
	return logStreamer{streamer}, nil
}

// OverrideMetricsVerb counts pods/log GETs as CONNECT, as upstream.
func (r *LogREST) OverrideMetricsVerb(oldVerb string) string {
	if oldVerb == "GET" {
		return "CONNECT"
	}
	return oldVerb
}

// StreamREST is pods/exec, pods/attach or pods/portforward (kind): a
// connection upgraded (SPDY or WebSocket) and proxied to the kubelet's
// /exec, /attach or /portForward.
type StreamREST struct {
	pods     rest.Getter
	kubelets *Kubelets
	kind     string
}

var _ rest.Connecter = &StreamREST{}

// New implements rest.Storage.
func (r *StreamREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy implements rest.Storage.
func (r *StreamREST) Destroy() {}

// ConnectMethods implements rest.Connecter: GET for WebSocket clients,
// POST for SPDY ones (upstream's upgradeableMethods).
func (r *StreamREST) ConnectMethods() []string { return []string{"GET", "POST"} }

// NewConnectOptions implements rest.Connecter.
func (r *StreamREST) NewConnectOptions() (runtime.Object, bool, string) {
	switch r.kind {
	case "exec":
		return &corev1.PodExecOptions{}, false, ""
	case "attach":
		return &corev1.PodAttachOptions{}, false, ""
	default:
		return &corev1.PodPortForwardOptions{}, false, ""
	}
}

// Connect implements rest.Connecter: the pod must be on a node (400
// otherwise) and, for exec and attach, name a valid container; then the
// upgrade is proxied to its kubelet. As upstream with its default feature
// gates (TranslateStreamCloseWebsocketRequests, PortForwardWebsockets):
// a WebSocket exec or attach of protocol v5.channel.k8s.io is translated
// to SPDY towards the kubelet, a WebSocket port-forward of
// SPDY/3.1+portforward.k8s.io is tunnelled over SPDY; everything else
// (SPDY, older WebSocket protocols) is proxied as it is.
func (r *StreamREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	pod, err := getPod(ctx, r.pods, name)
	if err != nil {
		return nil, err
	}
	path, query, streams, err := r.target(pod, opts)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	location, err := r.kubelets.kubeletURL(ctx, pod.Spec.NodeName, path, query)
	if err != nil {
		return nil, err
	}
	// wrapTransport false, upgradeRequired true (upstream's
	// newThrottledUpgradeAwareProxyHandler); no bandwidth limit.
	handler := proxy.NewUpgradeAwareHandler(location, r.kubelets.Transport, false, true, proxy.NewErrorResponder(responder))
	if r.kind == "portforward" {
		return translator.NewTranslatingHandler(handler, translator.NewTunnelingHandler(handler),
			wsstream.IsWebSocketRequestWithTunnelingProtocol), nil
	}
	st := translator.NewStreamTranslatorHandler(location, r.kubelets.Transport, 0, streams)
	return translator.NewTranslatingHandler(handler, st, wsstream.IsWebSocketRequestWithStreamCloseProtocol), nil
}

// target is the kubelet path and query for opts, and the streams asked
// for (exec and attach): upstream's ExecLocation, AttachLocation and
// PortForwardLocation. The container is checked before the node, as there.
func (r *StreamREST) target(pod *corev1.Pod, opts runtime.Object) (string, url.Values, translator.Options, error) {
	var container string
	var query url.Values
	var streams translator.Options
	switch o := opts.(type) {
	case *corev1.PodExecOptions:
		container, query = o.Container, streamQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY, o.Command)
		streams = translator.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}
	case *corev1.PodAttachOptions:
		container, query = o.Container, streamQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY, nil)
		streams = translator.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}
	case *corev1.PodPortForwardOptions:
		return fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name), portForwardQuery(o.Ports), streams, nil
	default:
		return "", nil, streams, fmt.Errorf("invalid options object: %#v", opts)
	}
	container, err := validateContainer(container, pod)
	if err != nil {
		return "", nil, streams, err
	}
	return fmt.Sprintf("/%s/%s/%s/%s", r.kind, pod.Namespace, pod.Name, container), query, streams, nil
}

// validateLogOptions is upstream's ValidatePodLogOptions
// (pkg/apis/core/validation/validation.go) with the PodLogsQuerySplitStreams
// gate off, as by default in 1.34: stream may not be given.
func validateLogOptions(opts *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if opts.Stream != nil {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	return errs
}
