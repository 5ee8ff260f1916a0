package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
)

// channelProtocol is the kubelet's WebSocket stream protocol that
// containerd's CRI streaming server speaks for exec, attach and
// port-forward: every binary message carries a channel number, then that
// channel's bytes. Version 4 has no way to close a single channel, so
// stdin cannot be half-closed (SPDY, the protocol kubectl uses through
// the API server, can). skiff uses it because it needs no module beyond
// golang.org/x/net.
const channelProtocol = "v4.channel.k8s.io"

// handshakeTimeout bounds connecting to the agent and the upgrade.
const handshakeTimeout = 30 * time.Second

// channelConn is a client connection of channelProtocol. send may be
// called concurrently with recv and with other sends.
type channelConn struct {
	ws  *websocket.Conn
	wmu sync.Mutex
}

// address returns where the agent's API is: a unix socket path or an
// http://host:port URL (--server, else <root-dir>/skiff.sock).
func (c *clientOptions) address() string {
	if c.server != "" {
		return c.server
	}
	return filepath.Join(c.rootDir, "skiff.sock")
}

// dialAgent connects to the agent at addr (see clientOptions.address) and
// returns the connection and the host to name in requests.
func dialAgent(ctx context.Context, addr string) (net.Conn, string, error) {
	var d net.Dialer
	if path, ok := strings.CutPrefix(addr, "unix://"); ok || strings.HasPrefix(addr, "/") {
		if !ok {
			path = addr
		}
		conn, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return nil, "", fmt.Errorf("connect to skiff API: %w", err)
		}
		return conn, "localhost", nil
	}
	u, err := url.Parse(addr)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, "", fmt.Errorf("server address %q: streaming needs the agent's unix socket or an http://host:port URL", addr)
	}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, "", fmt.Errorf("connect to skiff API: %w", err)
	}
	return conn, u.Host, nil
}

// dialChannels opens a channelProtocol session at path?q on the agent at
// addr. A refusal (the pod does not exist, the container is not running)
// is an error with the agent's message.
func dialChannels(ctx context.Context, addr, path string, q url.Values) (*channelConn, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	conn, host, err := dialAgent(ctx, addr)
	if err != nil {
		return nil, err
	}
	loc := "ws://" + host + path
	if len(q) > 0 {
		loc += "?" + q.Encode()
	}
	cfg, err := websocket.NewConfig(loc, "http://"+host)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("stream request: %w", err)
	}
	cfg.Protocol = []string{channelProtocol}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	rec := &recordingConn{Conn: conn}
	ws, err := websocket.NewClient(cfg, rec)
	if err != nil {
		defer func() { _ = conn.Close() }()
		if errors.Is(err, websocket.ErrBadStatus) {
			return nil, refusal(rec.read.Bytes(), conn)
		}
		return nil, fmt.Errorf("open stream: %w", err)
	}
	rec.stop()
	_ = conn.SetDeadline(time.Time{})
	ws.PayloadType = websocket.BinaryFrame
	return &channelConn{ws: ws}, nil
}

// refusal reads the agent's answer to a failed upgrade (the bytes read so
// far, then the rest from conn) and returns it as an error.
func refusal(read []byte, conn net.Conn) error {
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(bytes.NewReader(read), conn)), nil)
	if err != nil {
		return fmt.Errorf("the agent refused the stream: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = resp.Status
	}
	return errors.New(msg)
}

// recordingConn keeps what is read until stop: the handshake's answer,
// which x/net/websocket does not return when it is not an upgrade.
type recordingConn struct {
	net.Conn
	mu      sync.Mutex
	read    bytes.Buffer
	stopped bool
}

func (r *recordingConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	if !r.stopped {
		r.read.Write(p[:n])
	}
	r.mu.Unlock()
	return n, err
}

func (r *recordingConn) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.read = bytes.Buffer{}
}

// send sends p on channel ch.
func (c *channelConn) send(ch byte, p []byte) error {
	msg := make([]byte, 0, len(p)+1)
	msg = append(append(msg, ch), p...)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return websocket.Message.Send(c.ws, msg)
}

// recv returns the next message's channel and bytes; io.EOF when the
// agent closed the session.
func (c *channelConn) recv() (byte, []byte, error) {
	for {
		var msg []byte
		if err := websocket.Message.Receive(c.ws, &msg); err != nil {
			return 0, nil, err
		}
		if len(msg) > 0 {
			return msg[0], msg[1:], nil
		}
	}
}

// Close closes the session. Idempotent.
func (c *channelConn) Close() error { return c.ws.Close() }
