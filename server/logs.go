package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/podlogs"
)

// logQuery is the parsed query of /containerLogs (v1.PodLogOptions).
type logQuery struct {
	follow, previous, timestamps bool
	tailLines                    int // -1: all
	// since: lines before it are skipped (zero: none).
	since time.Time
	// limitBytes ends the output (0: no limit).
	limitBytes int64
	// stream is podlogs.Stdout, podlogs.Stderr or "" (All).
	stream string
}

// httpError is an error with the HTTP status to answer it with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *httpError {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// handleContainerLogs serves GET /containerLogs/{namespace}/{pod}/{container}
// with the kubelet's query parameters and error messages (404 for a pod or
// container that does not exist, 400 for a container without the requested
// logs). The log of a container's latest run is <restartCount>.log, the
// previous run's <restartCount-1>.log (A.35: init containers included).
// With follow=true the response is flushed as lines arrive and ends when
// that run of the container is no longer running, when the client goes
// away, or when the server shuts down.
func (s *Server) handleContainerLogs(w http.ResponseWriter, r *http.Request) {
	q, err := parseLogQuery(r.URL.Query(), s.clock.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	path, opts, err := s.logTarget(r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), q)
	if err != nil {
		writeError(w, err)
		return
	}
	s.streamLogs(w, r, path, opts)
}

// writeError answers with err's message and, for an *httpError, its status
// (500 otherwise).
func writeError(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = errorf(http.StatusInternalServerError, "%v", err)
	}
	http.Error(w, he.msg, he.code)
}

// parseLogQuery parses the v1.PodLogOptions of a query and checks them
// as the API server's ValidatePodLogOptions does (stream selection on, as
// PodLogsQuerySplitStreams is in 1.37); sinceSeconds counts back from now.
func parseLogQuery(v url.Values, now time.Time) (logQuery, error) {
	q := logQuery{tailLines: -1}
	for name, dst := range map[string]*bool{"follow": &q.follow, "previous": &q.previous, "timestamps": &q.timestamps} {
		if s := v.Get(name); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return q, errorf(http.StatusBadRequest, "invalid %s %q: must be true or false", name, s)
			}
			*dst = b
		}
	}
	positive := func(name string, min int64) (int64, bool, error) {
		s := v.Get(name)
		if s == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false, errorf(http.StatusBadRequest, "invalid %s %q: must be an integer", name, s)
		}
		if n < min {
			if min == 0 {
				return 0, false, errorf(http.StatusUnprocessableEntity, "%s must be a non-negative number, got %d", name, n)
			}
			return 0, false, errorf(http.StatusUnprocessableEntity, "%s must be greater than 0, got %d", name, n)
		}
		return n, true, nil
	}
	tail, hasTail, err := positive("tailLines", 0)
	if err != nil {
		return q, err
	}
	if hasTail {
		q.tailLines = int(tail)
	}
	if q.limitBytes, _, err = positive("limitBytes", 1); err != nil {
		return q, err
	}
	secs, hasSecs, err := positive("sinceSeconds", 1)
	if err != nil {
		return q, err
	}
	if st := v.Get("sinceTime"); st != "" {
		if hasSecs {
			return q, errorf(http.StatusUnprocessableEntity, "at most one of `sinceTime` or `sinceSeconds` may be specified")
		}
		if q.since, err = time.Parse(time.RFC3339, st); err != nil {
			return q, errorf(http.StatusBadRequest, "invalid sinceTime %q: must be RFC 3339", st)
		}
	} else if hasSecs {
		q.since = now.Add(-time.Duration(secs) * time.Second)
	}
	switch st := v.Get("stream"); st {
	case "", string(v1.LogStreamAll):
	case string(v1.LogStreamStdout), string(v1.LogStreamStderr):
		if hasTail {
			return q, errorf(http.StatusUnprocessableEntity, "`tailLines` and specific `stream` are mutually exclusive for now")
		}
		q.stream = strings.ToLower(st)
	default:
		return q, errorf(http.StatusUnprocessableEntity, "stream: Unsupported value: %q: supported values: \"All\", \"Stderr\", \"Stdout\"", st)
	}
	return q, nil
}

// logTarget resolves the log file to read and how to read it.
func (s *Server) logTarget(ns, name, container string, q logQuery) (string, podlogs.ReadOptions, error) {
	pod := findPod(s.pods.Pods(), ns, name)
	if pod == nil {
		return "", podlogs.ReadOptions{}, errorf(http.StatusNotFound, "pod %q does not exist", name)
	}
	if !hasContainer(pod, container) {
		return "", podlogs.ReadOptions{}, errorf(http.StatusNotFound, "container %q not found in pod %q", container, name)
	}
	run, err := logRun(pod, container, q.previous)
	if err != nil {
		return "", podlogs.ReadOptions{}, err
	}
	dir := podlogs.PodDir(s.podLogsDir, ns, name, string(pod.UID))
	path := podlogs.ContainerLogPath(dir, container, run)
	if info, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", podlogs.ReadOptions{}, errorf(http.StatusBadRequest,
			"container %q in pod %q has no log file for run %d", container, name, run)
	} else if err == nil && !info.Mode().IsRegular() {
		// A symlink (or FIFO) planted in the log directory: never
		// followed out of it.
		return "", podlogs.ReadOptions{}, errorf(http.StatusInternalServerError,
			"log file %s of container %q in pod %q is not a regular file", path, container, name)
	}
	opts := podlogs.ReadOptions{
		Follow:       q.follow,
		TailLines:    q.tailLines,
		Timestamps:   q.timestamps,
		Stream:       q.stream,
		Since:        q.since,
		LimitBytes:   q.limitBytes,
		PollInterval: s.pollInterval,
	}
	if q.follow {
		opts.Running = s.runningFunc(ns, name, pod.UID, container, run)
	}
	return path, opts, nil
}

// streamLogs writes the log file as the response.
func (s *Server) streamLogs(w http.ResponseWriter, r *http.Request, path string, opts podlogs.ReadOptions) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	var out io.Writer = w
	if opts.Follow {
		rc := http.NewResponseController(w)
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush() // let the client see the stream start before any output
		out = flushWriter{w: w, rc: rc}
	}
	err := podlogs.Copy(r.Context(), out, path, opts)
	if err != nil && r.Context().Err() == nil {
		s.log.Debug("stream container log", "path", path, "err", err)
	}
}

// flushWriter flushes the response after each write, so that followed logs
// reach the client as they are written (podlogs.Copy writes in batches).
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, f.rc.Flush()
}

// hasContainer reports whether the pod spec has an init, app or ephemeral
// container with that name.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}

// containerStatus finds the status of a container among the init, app and
// ephemeral container statuses.
func containerStatus(pod *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{
		pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses,
	} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// logRun returns which run (restart count) of the container to read,
// following the kubelet's validateContainerLogStatus and its messages.
func logRun(pod *v1.Pod, container string, previous bool) (int, error) {
	cs := containerStatus(pod, container)
	if cs == nil {
		return 0, errorf(http.StatusBadRequest, "container %q in pod %q is not available", container, pod.Name)
	}
	run := int(cs.RestartCount)
	switch {
	case previous:
		if run == 0 {
			return 0, errorf(http.StatusBadRequest, "previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return run - 1, nil
	case cs.State.Running != nil, cs.State.Terminated != nil, cs.LastTerminationState.Terminated != nil:
		return run, nil
	case cs.State.Waiting != nil:
		return 0, errorf(http.StatusBadRequest, "container %q in pod %q is waiting to start: %s",
			container, pod.Name, waitingReason(cs.State.Waiting.Reason))
	default:
		return 0, errorf(http.StatusBadRequest, "container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
	}
}

func waitingReason(reason string) string {
	switch reason {
	case "ErrImagePull":
		return "image can't be pulled"
	case "ImagePullBackOff":
		return "trying and failing to pull image"
	default:
		return reason
	}
}

// runningFunc reports, for podlogs.ReadOptions.Running, whether the given
// run of the container is still running in the same pod.
func (s *Server) runningFunc(ns, name string, uid types.UID, container string, run int) func() bool {
	return func() bool {
		pod := findPod(s.pods.Pods(), ns, name)
		if pod == nil || pod.UID != uid {
			return false
		}
		cs := containerStatus(pod, container)
		return cs != nil && int(cs.RestartCount) == run && cs.State.Running != nil
	}
}
