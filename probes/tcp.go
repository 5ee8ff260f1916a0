package probes

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"time"
)

// TCPProber runs tcpSocket probes (B.5): the probe succeeds when a TCP
// connection opens within the timeout, even if the server closes it at
// once. The zero value is ready to use and safe for concurrent use.
type TCPProber struct{}

// Probe dials host:port. A failed or timed-out connection is a Failure whose
// output is the dial error, as in the kubelet; Probe never returns an error.
func (TCPProber) Probe(ctx context.Context, host string, port int, timeout time.Duration) (Result, string, error) {
	d := newDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		// Errors are failures, so that timeouts count against the threshold.
		return Failure, err.Error(), nil
	}
	_ = conn.Close() // the connection was opened: that is all a TCP probe asks
	return Success, "", nil
}

// newDialer returns the dialer of TCP, HTTP and gRPC probes. Like the
// kubelet's probe dialer it sets SO_LINGER to 1s, so a probe's connection is
// reset rather than left in TIME_WAIT: a node probing every container every
// few seconds would otherwise pile up sockets (kubernetes#89898).
func newDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(setLinger)
		},
	}
}
