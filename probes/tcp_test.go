package probes

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tcpListener returns a loopback listener that accepts connections and,
// if closeAtOnce, closes each one as soon as it is accepted.
func tcpListener(t *testing.T, closeAtOnce bool) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if closeAtOnce {
				c.Close()
			} else {
				held = append(held, c)
			}
		}
	}()
	return hostPort(t, l.Addr().String())
}

// fullBacklogPort returns a loopback port whose listener never accepts and
// whose accept queue is full, so that a new connection attempt hangs (Linux
// drops the SYN) until the dialer's timeout.
func fullBacklogPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Fill the queue: dial until an attempt times out.
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return port
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("could not fill the accept queue of a loopback listener")
	return 0
}

func TestTCPProber_B5_Open(t *testing.T) {
	for _, closeAtOnce := range []bool{false, true} {
		host, port := tcpListener(t, closeAtOnce)
		res, out, err := TCPProber{}.Probe(t.Context(), host, port, time.Second)
		// B.5: success iff the port is open, even if the server closes the
		// connection at once.
		if res != Success || out != "" || err != nil {
			t.Errorf("closeAtOnce=%v: Probe = %v, %q, %v; want Success, \"\", nil", closeAtOnce, res, out, err)
		}
	}
}

func TestTCPProber_B5_Failures(t *testing.T) {
	tests := []struct {
		name    string
		port    func(t *testing.T) int
		timeout time.Duration
		wantOut string // the kubelet's output is the dial error
	}{
		{"connection refused", closedPort, time.Second, "connect: connection refused"},
		{"timeout", fullBacklogPort, 300 * time.Millisecond, "i/o timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			port := tc.port(t)
			start := time.Now()
			res, out, err := TCPProber{}.Probe(t.Context(), "127.0.0.1", port, tc.timeout)
			if res != Failure || err != nil {
				t.Errorf("Probe = %v, %q, %v; want Failure without error", res, out, err)
			}
			wantPrefix := "dial tcp 127.0.0.1:" + strconv.Itoa(port) + ": "
			if !strings.HasPrefix(out, wantPrefix) || !strings.Contains(out, tc.wantOut) {
				t.Errorf("output = %q, want %q...%q", out, wantPrefix, tc.wantOut)
			}
			if d := time.Since(start); d > tc.timeout+2*time.Second {
				t.Errorf("probe took %v, want about its %v timeout at most", d, tc.timeout)
			}
		})
	}
}

func TestTCPProber_B5_CancelledContext(t *testing.T) {
	host, port := tcpListener(t, false)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if res, _, _ := (TCPProber{}).Probe(ctx, host, port, time.Second); res != Failure {
		t.Errorf("Probe with a cancelled context = %v, want Failure", res)
	}
}
