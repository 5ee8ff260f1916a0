package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"
)

// maxProbeRetries is how often a probe that errors (as opposed to fails) is
// tried in one round, as in the kubelet.
const maxProbeRetries = 3

// errNoHandler is returned for a probe that sets none of the handlers.
var errNoHandler = errors.New("probe has no handler")

// target is what a probe is aimed at: one container of one pod.
type target struct {
	podIP       string
	container   *v1.Container // read-only
	containerID string
}

// eventFunc records an event about the probed container.
type eventFunc func(eventType, reason, message string)

// handlers dispatches a v1.Probe to the prober of its handler. Safe for
// concurrent use.
type handlers struct {
	exec ExecProber
	http *HTTPProber
	tcp  TCPProber
	grpc GRPCProber
}

// newHandlers returns handlers that exec through e.
func newHandlers(e Execer) *handlers {
	return &handlers{exec: ExecProber{Exec: e}, http: NewHTTPProber()}
}

// run runs the probe once through its handler (B.2). The timeout is the
// probe's timeoutSeconds.
func (h *handlers) run(ctx context.Context, p *v1.Probe, t target) (Result, string, error) {
	timeout := timingOf(p).timeout
	switch {
	case p.Exec != nil:
		cmd := expandCommand(p.Exec.Command, t.container.Env)
		return h.exec.Probe(ctx, t.containerID, cmd, timeout)
	case p.HTTPGet != nil:
		req, err := NewHTTPRequest(p.HTTPGet, t.container, t.podIP)
		if err != nil {
			return Unknown, "", err
		}
		return h.http.Probe(ctx, req, timeout)
	case p.TCPSocket != nil:
		port, err := ResolvePort(p.TCPSocket.Port, t.container)
		if err != nil {
			return Unknown, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		return h.tcp.Probe(ctx, host, port, timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return h.grpc.Probe(ctx, t.podIP, service, int(p.GRPC.Port), timeout)
	default:
		return Unknown, "", fmt.Errorf("container %s: %w", t.container.Name, errNoHandler)
	}
}

// runWithRetries runs the probe until it does not error, at most
// maxProbeRetries times, and returns the last outcome.
func (h *handlers) runWithRetries(ctx context.Context, p *v1.Probe, t target) (Result, string, error) {
	var (
		res Result
		out string
		err error
	)
	for range maxProbeRetries {
		res, out, err = h.run(ctx, p, t)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	return res, out, err
}

// probe runs one round of a probe of kind k and maps the prober's outcome
// to a worker result (Success or Failure), recording the kubelet's events
// (B.18) through event:
//
//	Unhealthy     "<Kind> probe failed: <output>"
//	Unhealthy     "<Kind> probe errored and resulted in <result> state: <err>"
//	ProbeWarning  "<Kind> probe warning: <output>"
//
// An error means the round says nothing about the container: the worker
// throws the result away. Nothing is recorded once ctx is done (the worker
// is being stopped).
func (h *handlers) probe(ctx context.Context, k Kind, p *v1.Probe, t target, event eventFunc, log *slog.Logger) (Result, error) {
	res, out, err := h.runWithRetries(ctx, p, t)
	if ctx.Err() != nil {
		return Unknown, ctx.Err()
	}
	if err != nil {
		log.Debug("probe errored", "probe", k, "result", res, "err", err)
		event(v1.EventTypeWarning, ReasonUnhealthy, fmt.Sprintf("%s probe errored and resulted in %s state: %s", k, res, err))
		return Failure, err
	}
	switch res {
	case Success:
		log.Debug("probe succeeded", "probe", k)
		return Success, nil
	case Warning:
		log.Debug("probe succeeded with a warning", "probe", k, "output", out)
		event(v1.EventTypeWarning, ReasonProbeWarning, fmt.Sprintf("%s probe warning: %s", k, out))
		return Success, nil
	case Failure:
		log.Debug("probe failed", "probe", k, "output", out)
		event(v1.EventTypeWarning, ReasonUnhealthy, fmt.Sprintf("%s probe failed: %s", k, out))
		return Failure, nil
	default:
		log.Debug("probe result unknown", "probe", k, "output", out)
		return Failure, nil
	}
}
