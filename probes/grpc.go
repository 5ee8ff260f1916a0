package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// GRPCProber runs grpc probes (B.6): one grpc.health.v1.Health/Check call
// over plaintext HTTP/2 (the kubelet supports no TLS here); SERVING is
// Success, every other answer or error is a Failure with the kubelet's
// output. The zero value is ready to use and safe for concurrent use.
type GRPCProber struct{}

// Probe checks service ("" is the server's overall health) at host:port.
// Like the kubelet (which dials with grpc.WithBlock), it first waits until
// the connection is ready, so a refused or silent port is a Failure
// "timeout: failed to connect service ..." after the full timeout, not at
// once. The timeout covers connecting and the call. Probe never returns an
// error: every problem is a Failure, as in the kubelet.
func (GRPCProber) Probe(ctx context.Context, host, service string, port int, timeout time.Duration) (Result, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dialer := newDialer()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(UserAgent),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", a)
		}),
	)
	if err != nil {
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer func() { _ = conn.Close() }()
	if err := waitReady(ctx, conn); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return Failure, grpcFailure(err, timeout), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return Success, "service healthy", nil
}

// waitReady connects conn and blocks until it is ready or ctx is done
// (then it returns ctx.Err()), as a dial with grpc.WithBlock does.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.Shutdown:
			return errors.New("connection shut down")
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}

// grpcFailure words a failed Check as the kubelet does.
func grpcFailure(err error, timeout time.Duration) string {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
	switch st.Code() {
	case codes.Unimplemented:
		return "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()
	case codes.DeadlineExceeded:
		return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
	default:
		return fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
}
