package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/skiffnode/skiff/runtime"
)

// SandboxFinder finds the sandbox of a pod, for /portForward.
type SandboxFinder interface {
	// PodSandboxID returns the ID of the ready sandbox of the pod with
	// uid, or an error wrapping runtime.ErrNotFound when it has none.
	// Safe for concurrent use.
	PodSandboxID(ctx context.Context, uid types.UID) (string, error)
}

// streamOptions are the streams a client of /exec or /attach asks for
// (the kubelet's remotecommand Options).
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// handleExec serves GET and POST /exec/{namespace}/{pod}[/{uid}]/{container}
// ?command=...&command=...&input=1&output=1&error=1&tty=1 as the kubelet's
// getExec: the pod must exist (404 "pod does not exist"), the container
// must be running (500 `container not found ("name")`), then the runtime's
// streaming session is proxied (H.25).
func (s *Server) handleExec(w http.ResponseWriter, r *http.Request) {
	notFound := func(container, _ string) string { return fmt.Sprintf("container not found (%q)", container) }
	s.serveContainerStream(w, r, notFound, func(ctx context.Context, pod *v1.Pod, id string, o streamOptions) (string, error) {
		return s.streamer.Exec(ctx, id, r.URL.Query()[v1.ExecCommandParam], o.tty, o.stdin, o.stdout, o.stderr)
	})
}

// handleAttach serves GET and POST /attach/{namespace}/{pod}[/{uid}]/{container}
// like handleExec, as the kubelet's getAttach: the terminal is the
// container's own (its spec's tty), whatever the query says, and a
// container that is not running is `container NAME not found in pod
// POD_NAMESPACE` (500).
func (s *Server) handleAttach(w http.ResponseWriter, r *http.Request) {
	notFound := func(container, podFullName string) string {
		return fmt.Sprintf("container %s not found in pod %s", container, podFullName)
	}
	s.serveContainerStream(w, r, notFound, func(ctx context.Context, pod *v1.Pod, id string, o streamOptions) (string, error) {
		c := containerSpec(pod, r.PathValue("container"))
		if c == nil {
			return "", errors.New(notFound(r.PathValue("container"), podFullName(pod)))
		}
		return s.streamer.Attach(ctx, id, c.TTY, o.stdin, o.stdout, o.stderr)
	})
}

// serveContainerStream is the common part of /exec and /attach: open asks
// the runtime for the session of the running container id; notFound words
// the error for a container that is not running.
func (s *Server) serveContainerStream(w http.ResponseWriter, r *http.Request, notFound func(container, podFullName string) string,
	open func(context.Context, *v1.Pod, string, streamOptions) (string, error),
) {
	if s.streamer == nil {
		http.Error(w, "streaming is not available on this server", http.StatusNotImplemented)
		return
	}
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pods := s.pods.Pods()
	if findPod(pods, ns, name) == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	pod := findPodUID(pods, ns, name, types.UID(r.PathValue("uid")))
	id := ""
	if pod != nil {
		id = runningContainerID(pod, container)
	}
	if id == "" {
		http.Error(w, notFound(container, name+"_"+ns), http.StatusInternalServerError)
		return
	}
	target, err := open(r.Context(), pod, id, opts)
	if err != nil {
		s.writeStreamError(w, err)
		return
	}
	s.proxyStream(w, r, target)
}

// handlePortForward serves GET and POST /portForward/{namespace}/{pod}[/{uid}]
// as the kubelet's getPortForward: 404 for a pod that does not exist (or
// has another uid), 500 `pod not found ("NAME_NAMESPACE")` for one
// without a ready sandbox, and the ports of a WebSocket request from its
// "port" query parameters (SPDY clients name them per stream).
func (s *Server) handlePortForward(w http.ResponseWriter, r *http.Request) {
	if s.streamer == nil || s.sandboxes == nil {
		http.Error(w, "streaming is not available on this server", http.StatusNotImplemented)
		return
	}
	ports, err := portForwardPorts(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pods := s.pods.Pods()
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	if findPod(pods, ns, name) == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	pod := findPodUID(pods, ns, name, types.UID(r.PathValue("uid")))
	if pod == nil {
		http.Error(w, "pod not found", http.StatusNotFound)
		return
	}
	sandbox, err := s.sandboxes.PodSandboxID(r.Context(), pod.UID)
	if errors.Is(err, runtime.ErrNotFound) {
		// The kubelet's words for a pod without running containers.
		http.Error(w, fmt.Sprintf("pod not found (%q)", podFullName(pod)), http.StatusInternalServerError)
		return
	}
	if err != nil {
		s.writeStreamError(w, err)
		return
	}
	target, err := s.streamer.PortForward(r.Context(), sandbox, ports)
	if err != nil {
		s.writeStreamError(w, err)
		return
	}
	s.proxyStream(w, r, target)
}

// writeStreamError answers a failed runtime call as the kubelet's
// streaming.WriteError: 404 for an unknown object, else 500, with the
// error's text.
func (s *Server) writeStreamError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, runtime.ErrNotFound) {
		code = http.StatusNotFound
	}
	s.log.Debug("streaming request", "err", err)
	http.Error(w, err.Error(), code)
}

// parseStreamOptions reads the kubelet's stream parameters, input,
// output, error and tty ("1" is true; the API server sends these): with a
// tty stderr is dropped (merged into stdout), and at least one stream is
// required.
func parseStreamOptions(q url.Values) (streamOptions, error) {
	o := streamOptions{
		stdin: q.Get(v1.ExecStdinParam) == "1", stdout: q.Get(v1.ExecStdoutParam) == "1",
		stderr: q.Get(v1.ExecStderrParam) == "1", tty: q.Get(v1.ExecTTYParam) == "1",
	}
	if o.tty {
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// portForwardPorts returns the ports of a WebSocket port-forward request
// (repeated or comma-separated "port" parameters, each 1-65535); an SPDY
// request has none.
func portForwardPorts(r *http.Request) ([]int32, error) {
	if !wsstream.IsWebSocketRequest(r) {
		return nil, nil
	}
	values := r.URL.Query()[v1.PortHeader]
	if len(values) == 0 {
		return nil, errors.New(`query parameter "port" is required`)
	}
	var ports []int32
	for _, v := range values {
		if v == "" {
			return nil, errors.New(`query parameter "port" cannot be empty`)
		}
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %w", v, err)
			}
			if n < 1 {
				return nil, fmt.Errorf("port %q must be > 0", v)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// findPodUID returns the pod namespace/name with uid, or, for an empty
// uid, the one findPod prefers; nil if there is none.
func findPodUID(pods []*v1.Pod, namespace, name string, uid types.UID) *v1.Pod {
	if uid == "" {
		return findPod(pods, namespace, name)
	}
	for _, p := range pods {
		if p != nil && p.Namespace == namespace && p.Name == name && p.UID == uid {
			return p
		}
	}
	return nil
}

// runningContainerID returns the runtime ID of the pod's container name
// (app, init or ephemeral) when its status shows it running, else "".
// Status carries IDs as <runtime>://<id>.
func runningContainerID(pod *v1.Pod, name string) string {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name != name || cs.State.Running == nil || cs.ContainerID == "" {
				continue
			}
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok {
				return id
			}
			return cs.ContainerID
		}
	}
	return ""
}

// podFullName is the kubelet's name_namespace of a pod.
func podFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }

// containerSpec returns the pod's container name (app, init or ephemeral),
// nil if there is none.
func containerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i]; c.Name == name {
			return (*v1.Container)(&c.EphemeralContainerCommon)
		}
	}
	return nil
}
