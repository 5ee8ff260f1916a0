package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/skiffnode/skiff/runtime"
)

// Execer runs one-shot commands in containers, for POST /run.
type Execer interface {
	// Exec runs cmd in the running container of the pod namespace/pod and
	// waits for it to exit, at most timeout (0: no limit). A non-zero exit
	// code is a result, not an error. An error for a pod or container that
	// does not exist wraps runtime.ErrNotFound (answered with 404); other errors (e.g. the container is not running) are
	// answered with 500 and their message. Safe for concurrent use.
	Exec(ctx context.Context, namespace, pod, container string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error)
}

// ExecResult is the JSON body of a successful POST /run: the command's
// output and exit code. Stdout and Stderr are base64 strings in JSON, as
// encoding/json writes []byte.
type ExecResult struct {
	Stdout   []byte `json:"stdout"`
	Stderr   []byte `json:"stderr"`
	ExitCode int32  `json:"exitCode"`
}

// handleRun serves POST /run/{namespace}/{pod}/{container}, like the
// kubelet's /run: the command is given as repeated "cmd" query parameters
// (?cmd=sh&cmd=-c&cmd=echo+hi; the kubelet's "command" is accepted too) and
// an optional "timeout" in whole seconds (0 or absent: no limit). The answer
// is an ExecResult; a command that exits non-zero is still a 200. Errors:
// 400 for a bad query, 404 for an unknown pod or container, 501 when the
// server has no Execer, 500 for anything else.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	if s.exec == nil {
		writeError(w, errorf(http.StatusNotImplemented, "command execution is not available on this server"))
		return
	}
	cmd, timeout, err := parseRunQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	res, err := s.exec.Exec(r.Context(), ns, pod, container, cmd, timeout)
	if err != nil {
		code := http.StatusInternalServerError
		if isNotFound(err) {
			code = http.StatusNotFound
		}
		s.log.Debug("run in container", "namespace", ns, "pod", pod, "container", container, "err", err)
		writeError(w, errorf(code, "%v", err))
		return
	}
	writeJSON(w, s.log, ExecResult{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode})
}

// parseRunQuery returns the command and timeout of a /run request.
func parseRunQuery(q url.Values) ([]string, time.Duration, error) {
	cmd := q["cmd"]
	if len(cmd) == 0 {
		cmd = q["command"]
	}
	if len(cmd) == 0 || cmd[0] == "" {
		return nil, 0, errorf(http.StatusBadRequest, "missing command: give it as repeated cmd query parameters")
	}
	var timeout time.Duration
	if s := q.Get("timeout"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return nil, 0, errorf(http.StatusBadRequest, "invalid timeout %q: must be a non-negative number of seconds", s)
		}
		timeout = time.Duration(n) * time.Second
	}
	return cmd, timeout, nil
}

// isNotFound reports whether an Execer error means no such pod or container.
func isNotFound(err error) bool { return errors.Is(err, runtime.ErrNotFound) }
