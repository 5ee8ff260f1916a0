// Package cri implements skiff's runtime port (runtime.Runtime) as a CRI v1
// client over gRPC. It is the only package that imports k8s.io/cri-api and
// the only place where gRPC status codes are translated (codes.NotFound
// becomes runtime.ErrNotFound).
package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// maxMsgSize is the largest gRPC message accepted or sent, as in the
// kubelet's CRI client (ListContainers on a busy node is large).
const maxMsgSize = 16 * 1024 * 1024

var _ runtime.Runtime = (*Runtime)(nil)

// Runtime is a CRI v1 client. All methods are safe for concurrent use.
// Every call is bounded by the timeout given to New, except PullImage (only
// the caller's context), StopContainer (timeout plus the grace period) and
// ExecSync (timeout plus the command's own timeout).
type Runtime struct {
	endpoint string
	timeout  time.Duration
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	img      runtimeapi.ImageServiceClient
	groups   *shimGroups // nil: one shim per sandbox (WithShimGroups)
}

// New connects to the CRI runtime at endpoint ("unix:///path" or a bare
// socket path) and checks with a Version call, bounded by timeout, that it
// serves CRI v1. timeout (> 0) also bounds every later call (see Runtime).
// The connection survives restarts of the runtime: while it is down calls
// fail (codes.Unavailable), and within about a second of its return they
// succeed again. The caller must Close the returned Runtime.
func New(ctx context.Context, endpoint string, timeout time.Duration, opts ...Option) (*Runtime, error) {
	r, err := newRuntime(ctx, endpoint, timeout)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// pingTimeout bounds Ping's Version call.
const pingTimeout = 2 * time.Second

// Ping reports whether a CRI v1 runtime serves at endpoint: nil when a
// fresh connection's Version call, bounded by ctx and two seconds, answers.
// It is a readiness probe (the managed containerd's).
func Ping(ctx context.Context, endpoint string) error {
	r, err := New(ctx, endpoint, pingTimeout)
	if err != nil {
		return err
	}
	_ = r.Close()
	return nil
}

// Reconnection to a runtime that went away (a restarting containerd):
// gRPC dials again with exponential back-off, and its default grows to
// 120 s, so after an outage of a minute or two the first calls would fail
// for minutes more although the runtime is back. The socket is local and a
// dial cheap: back off from 100 ms (as the kubelet's CRI client) to at most
// reconnectMaxDelay.
const reconnectMaxDelay = time.Second

// criWindow is the connection's and each stream's static HTTP/2 flow
// control window. With gRPC's default dynamic windows the client sends a
// BDP-estimation PING (and a WINDOW_UPDATE) after nearly every response
// that carries data, and reads the server's PING ack: on a local socket,
// where the bandwidth-delay product is tiny, that is pure overhead, about
// a third more frames, writes, reads and wakeups per CRI call (issue 13:
// 11 exec probes and 2 listings a second at 110 pods). 4 MiB is more than
// any steady reply; a larger one (a big ExecSync output, up to maxMsgSize)
// just takes a few window updates.
const criWindow = 4 << 20

var connectParams = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   reconnectMaxDelay,
	},
	MinConnectTimeout: 5 * time.Second,
}

// newRuntime is New with extra dial options (tests).
func newRuntime(ctx context.Context, endpoint string, timeout time.Duration, extra ...grpc.DialOption) (*Runtime, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("CRI timeout must be positive, got %v", timeout)
	}
	target, err := dialTarget(endpoint)
	if err != nil {
		return nil, err
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(connectParams),
		grpc.WithStaticStreamWindowSize(criWindow),
		grpc.WithStaticConnWindowSize(criWindow),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMsgSize),
			grpc.MaxCallSendMsgSize(maxMsgSize),
		),
	}, extra...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI runtime %s: %w", endpoint, err)
	}
	r := &Runtime{
		endpoint: endpoint,
		timeout:  timeout,
		conn:     conn,
		rt:       runtimeapi.NewRuntimeServiceClient(conn),
		img:      runtimeapi.NewImageServiceClient(conn),
	}
	if _, err := r.version(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return r, nil
}

// dialTarget turns an endpoint into a gRPC target; only unix sockets are
// supported.
func dialTarget(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		if strings.TrimPrefix(endpoint, "unix://") == "" {
			return "", fmt.Errorf("CRI endpoint %q has no socket path", endpoint)
		}
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	case endpoint == "":
		return "", errors.New("empty CRI endpoint")
	default:
		return "", fmt.Errorf("CRI endpoint %q: want unix:///path or an absolute socket path", endpoint)
	}
}

// Close closes the connection. Calls in flight fail. Idempotent.
func (r *Runtime) Close() error {
	err := r.conn.Close()
	if status.Code(err) == codes.Canceled {
		return nil // already closed
	}
	return err
}

// Version returns the runtime's name and versions (CRI Version).
func (r *Runtime) Version(ctx context.Context) (runtime.VersionInfo, error) {
	v, err := r.version(ctx)
	if err != nil {
		return runtime.VersionInfo{}, err
	}
	return runtime.VersionInfo{Name: v.RuntimeName, Version: v.RuntimeVersion, APIVersion: v.RuntimeApiVersion}, nil
}

func (r *Runtime) version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := r.rt.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("CRI runtime at %s does not serve CRI v1 (runtime.v1.RuntimeService): %w", r.endpoint, err)
		}
		return nil, fmt.Errorf("CRI version of %s: %w", r.endpoint, err)
	}
	if v.RuntimeApiVersion != "v1" {
		return nil, fmt.Errorf("CRI runtime at %s speaks CRI %q, skiff needs v1", r.endpoint, v.RuntimeApiVersion)
	}
	return v, nil
}

// callCtx bounds one call: d > 0 adds a timeout, d == 0 only the caller's
// context.
func callCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// wrap describes a failed call. codes.NotFound becomes runtime.ErrNotFound;
// other errors keep their gRPC status for errors.As / status.Code.
func wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if s, ok := status.FromError(err); ok && s.Code() == codes.NotFound {
		return fmt.Errorf("%s: %w: %s", what, runtime.ErrNotFound, s.Message())
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isNotFound reports whether err is a gRPC NotFound.
func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}

// timeFromNanos converts CRI nanoseconds; 0 stays the zero time.
func timeFromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
