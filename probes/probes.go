// Package probes runs the container probes of the kubelet (v1.34): startup,
// readiness and liveness probes with the exec, httpGet, tcpSocket and grpc
// handlers (checklist B.1–B.19).
//
// The package has three layers:
//
//   - probers, one per handler (ExecProber, HTTPProber, TCPProber,
//     GRPCProber): one check, no state;
//   - a worker per (pod, container, kind): a goroutine that runs the probe
//     every periodSeconds and applies initialDelaySeconds, the success and
//     failure thresholds and startup gating, as the kubelet's
//     pkg/kubelet/prober/worker.go does;
//   - the Manager, which owns the workers and their results and answers the
//     agent's questions (Ready, Started, LivenessFailed, StartupFailed).
//
// Results per kind, as in the kubelet:
//
//	kind       before the first verdict   verdict reached                     then
//	Startup    Unknown (not started)      Success or Failure after threshold  stops probing (on hold)
//	Readiness  Failure (not ready)        Success/Failure after threshold     keeps probing (may flap, B.19)
//	Liveness   Success                    Failure after failureThreshold      stops probing (on hold)
//
// Liveness and readiness probes do not run until the startup probe, if any,
// has succeeded (B.11). A worker on hold resumes only when the agent reports
// a new container ID for the container (AddContainer), i.e. after a restart.
//
// The package does not kill containers: the agent asks LivenessFailed and
// StartupFailed and kills, with the kubelet's message, through its own
// runtime calls.
package probes

import (
	"fmt"
	"time"

	"github.com/skiffnode/skiff/internal/k8sversion"

	v1 "k8s.io/api/core/v1"
)

// UserAgent is sent by HTTP and gRPC probes unless a probe overrides it. It
// names the Kubernetes version whose kubelet skiff follows.
const UserAgent = "kube-probe/" + k8sversion.MajorMinor

// maxOutputLength bounds the output kept from a probe (response body, exec
// stdout+stderr), like the kubelet's 10 KiB.
const maxOutputLength = 10 << 10

// Probe defaults (B.13, B.15), applied to zero fields.
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = time.Second
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// Event reasons, as the kubelet records them.
const (
	// ReasonUnhealthy is the reason of "<Kind> probe failed: ..." and
	// "<Kind> probe errored ..." events.
	ReasonUnhealthy = "Unhealthy"
	// ReasonProbeWarning is the reason of "<Kind> probe warning: ..."
	// events (a probe that succeeded with a warning, e.g. a redirect to
	// another host).
	ReasonProbeWarning = "ProbeWarning"
)

// Result is the outcome of a probe. The zero value is Unknown.
type Result int

// Probe results. Probers may return Warning (success, with something worth
// an event); the Manager only ever stores Unknown, Success or Failure.
const (
	Unknown Result = iota
	Success
	Warning
	Failure
)

// String returns the kubelet's lower-case name ("success", "failure"...),
// as used in event messages.
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Warning:
		return "warning"
	case Failure:
		return "failure"
	default:
		return "unknown"
	}
}

// Kind is the kind of a probe.
type Kind int

// Probe kinds.
const (
	Startup Kind = iota
	Readiness
	Liveness
)

// String returns the capitalised name the kubelet uses in events
// ("Liveness probe failed: ...").
func (k Kind) String() string {
	switch k {
	case Startup:
		return "Startup"
	case Readiness:
		return "Readiness"
	case Liveness:
		return "Liveness"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// initialResult is a worker's result before its first verdict: readiness is
// Failure until the first success (B.10), liveness Success (B.9), startup
// Unknown (not started, B.11).
func (k Kind) initialResult() Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

// specOf returns the container's probe of kind k, or nil.
func specOf(c *v1.Container, k Kind) *v1.Probe {
	switch k {
	case Startup:
		return c.StartupProbe
	case Readiness:
		return c.ReadinessProbe
	case Liveness:
		return c.LivenessProbe
	default:
		return nil
	}
}

// timing is a probe's schedule and thresholds with defaults applied.
type timing struct {
	initialDelay, period, timeout      time.Duration
	successThreshold, failureThreshold int
}

// timingOf applies the kubelet defaults to zero (or negative) fields. The
// pod spec is normally defaulted already; this keeps the worker safe when
// it is not.
func timingOf(p *v1.Probe) timing {
	t := timing{
		initialDelay:     time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second,
		period:           time.Duration(p.PeriodSeconds) * time.Second,
		timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		successThreshold: int(p.SuccessThreshold),
		failureThreshold: int(p.FailureThreshold),
	}
	if t.period <= 0 {
		t.period = DefaultPeriod
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout
	}
	if t.successThreshold <= 0 {
		t.successThreshold = DefaultSuccessThreshold
	}
	if t.failureThreshold <= 0 {
		t.failureThreshold = DefaultFailureThreshold
	}
	return t
}

// truncate keeps at most maxOutputLength bytes of b.
func truncate(b []byte) string {
	if len(b) > maxOutputLength {
		b = b[:maxOutputLength]
	}
	return string(b)
}
