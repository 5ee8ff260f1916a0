package pod

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// DefaultKubeletPort is the kubelet API's port when a Node does not say
// (upstream's ports.KubeletPort, kube-apiserver's --kubelet-port).
const DefaultKubeletPort = 10250

// preferredAddressTypes is the order in which a Node's addresses are tried
// for its kubelet: kubeadm's --kubelet-preferred-address-types
// (cmd/kubeadm/app/phases/controlplane/manifests.go), InternalIP first.
// kube-apiserver's own default puts Hostname first, which needs the node's
// name to resolve; skiff's agent reports its IPs.
func preferredAddressTypes() []corev1.NodeAddressType {
	return []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName}
}

// Kubelets finds the kubelet API of a node and talks to it: upstream's
// NodeConnectionInfoGetter (pkg/kubelet/client/kubelet_client.go), reading
// the Node through the nodes' storage.
type Kubelets struct {
	// Nodes is the nodes' storage.
	Nodes rest.Getter
	// LocalNode and LocalHost: when both are set, the kubelet of the Node
	// named LocalNode is reached at LocalHost (a host name or IP, the
	// shim's --node-kubelet-host) instead of one of its status addresses,
	// still on its status.daemonEndpoints.kubeletEndpoint.Port. Other
	// nodes are unaffected.
	LocalNode, LocalHost string
	// Transport reaches kubelets: TLS with the shim's kubelet client
	// certificate. Upgrade requests (exec, attach, port-forward) dial with
	// its TLS configuration.
	Transport *http.Transport
}

// NewKubeletTransport is the transport to kubelets: client certificate
// cert; serving certificates verified against roots, or, with nil roots,
// not verified at all. Why: kube-apiserver does not verify a kubelet's
// serving certificate either unless --kubelet-certificate-authority is
// given (pkg/kubelet/client/kubelet_client.go, MakeTransport: an empty CA
// is an insecure TLS config), and skiff's agent serves a self-signed one by
// default; the kubelet still authenticates the shim by its client
// certificate.
func NewKubeletTransport(cert tls.Certificate, roots *x509.CertPool) *http.Transport {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if roots != nil {
		cfg.RootCAs = roots
	} else {
		cfg.InsecureSkipVerify = true //nolint:gosec // see above: as kube-apiserver without --kubelet-certificate-authority
	}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
}

// kubeletURL returns https://<address>:<port>/path?query for node's kubelet.
func (k *Kubelets) kubeletURL(ctx context.Context, nodeName, path string, query url.Values) (*url.URL, error) {
	obj, err := k.Nodes.Get(genericapirequest.WithNamespace(ctx, ""), nodeName, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil, fmt.Errorf("node %s is a %T", nodeName, obj)
	}
	host, err := k.host(node)
	if err != nil {
		return nil, err
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultKubeletPort
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: path, RawQuery: query.Encode()}, nil
}

// host is the host at which node's kubelet is reached: LocalHost for
// LocalNode, else the node's preferred status address.
func (k *Kubelets) host(node *corev1.Node) (string, error) {
	if k.LocalHost != "" && k.LocalNode != "" && node.Name == k.LocalNode {
		return k.LocalHost, nil
	}
	return preferredAddress(node)
}

// preferredAddress is upstream's GetPreferredNodeAddress
// (pkg/util/node/node.go) with preferredAddressTypes; no match is an
// error naming the known addresses, as there.
func preferredAddress(node *corev1.Node) (string, error) {
	for _, t := range preferredAddressTypes() {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address, nil
			}
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses)
}

// getPod reads the pod name in ctx's namespace through pods.
func getPod(ctx context.Context, pods rest.Getter, name string) (*corev1.Pod, error) {
	obj, err := pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod %s is a %T", name, obj)
	}
	return pod, nil
}

// validateContainer is upstream's (pkg/registry/core/pod/strategy.go): an
// empty name picks the pod's only container; otherwise the name must be one
// of the pod's containers, init or ephemeral containers. Errors are 400s
// worded as there.
func validateContainer(container string, pod *corev1.Pod) (string, error) {
	names := containerNames(pod)
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		default:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
		}
	}
	for _, n := range names {
		if n == container {
			return container, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// containerNames lists the pod's containers in upstream's VisitContainers
// order: init, regular, ephemeral.
func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

// logQuery is the kubelet's /containerLogs query for opts, as upstream's
// LogLocation builds it (stream is left out: upstream sends it only with
// the alpha PodLogsQuerySplitStreams gate).
func logQuery(opts *corev1.PodLogOptions) url.Values {
	q := url.Values{}
	for key, on := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "timestamps": opts.Timestamps} {
		if on {
			q.Add(key, "true")
		}
	}
	for key, v := range map[string]*int64{"sinceSeconds": opts.SinceSeconds, "tailLines": opts.TailLines, "limitBytes": opts.LimitBytes} {
		if v != nil {
			q.Add(key, strconv.FormatInt(*v, 10))
		}
	}
	if opts.SinceTime != nil {
		q.Add("sinceTime", opts.SinceTime.Format(time.RFC3339))
	}
	return q
}

// streamQuery is the kubelet's query for exec and attach (upstream's
// streamParams): "1" for each stream asked for, then the command.
func streamQuery(stdin, stdout, stderr, tty bool, command []string) url.Values {
	q := url.Values{}
	for key, on := range map[string]bool{corev1.ExecStdinParam: stdin, corev1.ExecStdoutParam: stdout,
		corev1.ExecStderrParam: stderr, corev1.ExecTTYParam: tty} {
		if on {
			q.Add(key, "1")
		}
	}
	for _, c := range command {
		q.Add(corev1.ExecCommandParam, c)
	}
	return q
}

// portForwardQuery is the kubelet's /portForward query: the ports,
// comma-separated, in "port" (upstream's streamParams).
func portForwardQuery(ports []int32) url.Values {
	q := url.Values{}
	if len(ports) > 0 {
		s := make([]string, len(ports))
		for i, p := range ports {
			s[i] = strconv.Itoa(int(p))
		}
		q.Add(corev1.PortHeader, strings.Join(s, ","))
	}
	return q
}
