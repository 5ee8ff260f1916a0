package probes

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// slowHealth answers Check only when the caller gives up.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
}

func (slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// grpcServer starts a gRPC server on a loopback port. register adds its
// services; it may be nil (a server without the health service). The
// returned function gives the User-Agent of the last call.
func grpcServer(t *testing.T, register func(*grpc.Server)) (int, func() string) {
	t.Helper()
	var ua atomic.Value
	ua.Store("")
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			ua.Store(strings.Join(md.Get("user-agent"), ","))
		}
		return h(ctx, req)
	}))
	if register != nil {
		register(s)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }() // returns when Stop is called
	t.Cleanup(s.Stop)
	_, port := hostPort(t, l.Addr().String())
	return port, func() string { return ua.Load().(string) }
}

// healthServer starts a server whose overall health is SERVING and whose
// service "down" is NOT_SERVING.
func healthServer(t *testing.T) (int, func() string) {
	return grpcServer(t, func(s *grpc.Server) {
		hs := health.NewServer()
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(s, hs)
	})
}

func TestGRPCProber_B6_HealthStatus(t *testing.T) {
	port, _ := healthServer(t)
	tests := []struct {
		service string
		want    Result
		wantOut string
	}{
		{"", Success, "service healthy"},
		{"down", Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"nope", Failure, "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
	}
	for _, tc := range tests {
		t.Run("service="+tc.service, func(t *testing.T) {
			res, out, err := GRPCProber{}.Probe(t.Context(), "127.0.0.1", tc.service, port, 5*time.Second)
			if res != tc.want || out != tc.wantOut || err != nil {
				t.Errorf("Probe = %v, %q, %v; want %v, %q, nil", res, out, err, tc.want, tc.wantOut)
			}
		})
	}
}

func TestGRPCProber_B6_UserAgent(t *testing.T) {
	port, ua := healthServer(t)
	if res, out, _ := (GRPCProber{}).Probe(t.Context(), "127.0.0.1", "", port, 5*time.Second); res != Success {
		t.Fatalf("Probe = %v, %q", res, out)
	}
	// grpc-go appends its own name to the configured User-Agent.
	if got := ua(); !strings.HasPrefix(got, UserAgent+" ") {
		t.Errorf("User-Agent = %q, want %q followed by grpc-go's", got, UserAgent)
	}
}

func TestGRPCProber_B6_Errors(t *testing.T) {
	const timeout = 300 * time.Millisecond
	unimplemented, _ := grpcServer(t, nil)
	slow, _ := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, slowHealth{}) })
	_, silentPort := tcpListener(t, false) // accepts, never speaks HTTP/2
	refused := closedPort(t)
	connectTimeout := func(port int) string {
		return `timeout: failed to connect service "127.0.0.1:` + strconv.Itoa(port) + `" within 300ms: context deadline exceeded`
	}
	tests := []struct {
		name    string
		port    int
		wantOut string
	}{
		{"no health service", unimplemented,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"rpc timeout", slow, "timeout: health rpc did not complete within 300ms"},
		// As the kubelet dials with grpc.WithBlock, a port that refuses or
		// never answers is a connect timeout.
		{"connection refused", refused, connectTimeout(refused)},
		{"not a gRPC server", silentPort, connectTimeout(silentPort)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, out, err := GRPCProber{}.Probe(t.Context(), "127.0.0.1", "", tc.port, timeout)
			if res != Failure || out != tc.wantOut || err != nil {
				t.Errorf("Probe = %v, %q, %v;\nwant Failure, %q, nil", res, out, err, tc.wantOut)
			}
			if d := time.Since(start); d > timeout+3*time.Second {
				t.Errorf("probe took %v, want about its %v timeout at most", d, timeout)
			}
		})
	}
}

func TestGRPCProber_B6_CancelledContext(t *testing.T) {
	port, _ := healthServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if res, _, _ := (GRPCProber{}).Probe(ctx, "127.0.0.1", "", port, 5*time.Second); res != Failure {
		t.Errorf("Probe with a cancelled context = %v, want Failure", res)
	}
}
