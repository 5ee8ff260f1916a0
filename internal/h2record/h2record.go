// Package h2record records what gRPC clients send to a test server and
// counts the HTTP/2 frames in it, for tests of a client's flow-control
// settings (issue 13: no BDP-estimation PINGs on local sockets).
package h2record

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/net/http2"
)

// Listener wraps a net.Listener and records every byte its connections
// read, i.e. what the clients sent. Safe for concurrent use.
type Listener struct {
	net.Listener
	mu  sync.Mutex
	buf bytes.Buffer
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, l: l}, nil
}

// Sent returns a copy of what the clients sent so far.
func (l *Listener) Sent() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

type conn struct {
	net.Conn
	l *Listener
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.mu.Lock()
	c.l.buf.Write(p[:n])
	c.l.mu.Unlock()
	return n, err
}

// ClientPings parses what one client sent (its preface, then frames) and
// returns how many PING frames that are not acks it holds, and how many
// frames in all.
func ClientPings(sent []byte) (pings, frames int, err error) {
	if !bytes.HasPrefix(sent, []byte(http2.ClientPreface)) {
		return 0, 0, fmt.Errorf("no HTTP/2 preface in %d bytes", len(sent))
	}
	fr := http2.NewFramer(io.Discard, bytes.NewReader(sent[len(http2.ClientPreface):]))
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			return pings, frames, nil
		}
		frames++
		if p, ok := frame.(*http2.PingFrame); ok && !p.IsAck() {
			pings++
		}
	}
}
