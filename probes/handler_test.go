package probes

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeOnce runs one round of p against a container "app" with the given
// ports at podIP and returns the worker result, the error and the events
// recorded.
func probeOnce(t *testing.T, ctx context.Context, k Kind, p *v1.Probe, podIP string, ports ...v1.ContainerPort) (Result, []string, error) {
	t.Helper()
	h := newHandlers(newFakeExec())
	var log eventLog
	tgt := target{podIP: podIP, container: &v1.Container{Name: "app", Ports: ports}, containerID: "c1"}
	res, err := h.probe(ctx, k, p, tgt, func(eventType, reason, message string) {
		if eventType != v1.EventTypeWarning {
			t.Errorf("event type = %q, want Warning", eventType)
		}
		log.add(reason, message)
	}, discardLogger())
	return res, log.all(), err
}

func TestHandlers_B2_Dispatch(t *testing.T) {
	host, open := tcpListener(t, false)
	if host != "127.0.0.1" {
		t.Fatalf("listener host = %s", host)
	}
	grpcPort, _ := healthServer(t)
	closed := closedPort(t)
	down := "down"
	tests := []struct {
		name       string
		kind       Kind
		podIP      string // default 127.0.0.1
		handler    v1.ProbeHandler
		want       Result
		wantErr    bool
		wantEvents []string
	}{
		{
			name:    "tcpSocket defaults to the pod IP",
			kind:    Readiness,
			handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intPort(open)}},
			want:    Success,
		},
		{
			name:    "tcpSocket named port",
			kind:    Readiness,
			handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("svc")}},
			want:    Success,
		},
		{
			name:    "tcpSocket host overrides the pod IP",
			kind:    Liveness,
			podIP:   "192.0.2.1", // TEST-NET-1: never reached
			handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: "127.0.0.1", Port: intPort(open)}},
			want:    Success,
		},
		{
			name:    "tcpSocket closed port",
			kind:    Liveness,
			handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intPort(closed)}},
			want:    Failure,
			wantEvents: []string{"Unhealthy: Liveness probe failed: dial tcp 127.0.0.1:" +
				strconv.Itoa(closed) + ": connect: connection refused"},
		},
		{
			name:       "grpc at the pod IP",
			kind:       Startup,
			handler:    v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(grpcPort), Service: &down}},
			want:       Failure,
			wantEvents: []string{`Unhealthy: Startup probe failed: service unhealthy (responded with "NOT_SERVING")`},
		},
		{
			name:       "unknown named port errors",
			kind:       Readiness,
			handler:    v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("nope")}},
			want:       Failure,
			wantErr:    true,
			wantEvents: []string{`Unhealthy: Readiness probe errored and resulted in unknown state: probe port "nope" of container "app": port not found`},
		},
		{
			name:       "no handler errors",
			kind:       Liveness,
			want:       Failure,
			wantErr:    true,
			wantEvents: []string{"Unhealthy: Liveness probe errored and resulted in unknown state: container app: probe has no handler"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Probe{ProbeHandler: tc.handler, TimeoutSeconds: 2}
			podIP := tc.podIP
			if podIP == "" {
				podIP = "127.0.0.1"
			}
			res, events, err := probeOnce(t, t.Context(), tc.kind, p, podIP, v1.ContainerPort{Name: "svc", ContainerPort: int32(open)})
			if res != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("probe = %v, %v; want %v, error %v", res, err, tc.want, tc.wantErr)
			}
			if !reflect.DeepEqual(events, tc.wantEvents) {
				t.Errorf("events = %q, want %q", events, tc.wantEvents)
			}
		})
	}
}

func TestHandlers_B18_WarningEvent(t *testing.T) {
	s := newProbeServer(t, false)
	_, port := hostPort(t, s.srv.Listener.Addr().String())
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/redirect-other-host", Port: intPort(port)}}}
	res, events, err := probeOnce(t, t.Context(), Readiness, p, "127.0.0.1")
	// A redirect to another host is a success with a ProbeWarning event.
	if res != Success || err != nil {
		t.Errorf("probe = %v, %v; want Success", res, err)
	}
	want := "ProbeWarning: Readiness probe warning: Probe terminated redirects, Response body: "
	if len(events) != 1 || !strings.HasPrefix(events[0], want) {
		t.Errorf("events = %q, want one %q...", events, want)
	}
}

func TestHandlers_B3_ExecRetriesErrors(t *testing.T) {
	f := newFakeExec()
	h := newHandlers(f)
	f.set("check", execReply{err: errors.New("runtime down")})
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check", "$(PORT)"}}}, TimeoutSeconds: 4}
	tgt := target{container: &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "PORT", Value: "8080"}}}, containerID: "c9"}
	var log eventLog
	res, err := h.probe(t.Context(), Liveness, p, tgt, func(_, r, m string) { log.add(r, m) }, discardLogger())
	if res != Failure || err == nil {
		t.Errorf("probe = %v, %v; want an error", res, err)
	}
	// An erroring probe is tried maxProbeRetries times in one round.
	if n := f.count("check"); n != maxProbeRetries {
		t.Errorf("exec ran %d times, want %d", n, maxProbeRetries)
	}
	if !reflect.DeepEqual(f.last, []string{"check", "8080"}) || f.lastID != "c9" || f.timeout != 4*time.Second {
		t.Errorf("exec got %q in %s with timeout %v; want [check 8080] in c9 with 4s", f.last, f.lastID, f.timeout)
	}
	want := []string{"Unhealthy: Liveness probe errored and resulted in unknown state: exec probe in container c9: runtime down"}
	if got := log.all(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestHandlers_CancelledRecordsNothing(t *testing.T) {
	_, port := tcpListener(t, false)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intPort(port)}}}
	res, events, err := probeOnce(t, ctx, Liveness, p, "127.0.0.1")
	if res != Unknown || !errors.Is(err, context.Canceled) || len(events) != 0 {
		t.Errorf("probe after cancel = %v, %v, events %q; want Unknown, context.Canceled, none", res, err, events)
	}
}
