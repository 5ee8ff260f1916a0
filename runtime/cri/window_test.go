package cri

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recordingListener records every byte its connections read (what the
// client sent).
type recordingListener struct {
	net.Listener
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

func (l *recordingListener) sent() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.mu.Lock()
	c.l.buf.Write(p[:n])
	c.l.mu.Unlock()
	return n, err
}

// The client's flow control windows are static: it sends no BDP PING after
// the responses, which on a local socket only cost frames, syscalls and
// wakeups at every CRI call (issue 13).
func TestClientSendsNoBDPPings(t *testing.T) {
	f := newFakeCRI()
	f.containers["c1"] = &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	f.execResp = &runtimeapi.ExecSyncResponse{Stdout: []byte("out")}
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: lis}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	go func() { _ = srv.Serve(rec) }()
	t.Cleanup(srv.Stop)
	r, err := New(context.Background(), "unix://"+lis.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for range 20 {
		if _, err := r.ExecSync(context.Background(), "c1", []string{"true"}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Let the last frames arrive.
	time.Sleep(50 * time.Millisecond)
	sent := rec.sent()
	if !bytes.HasPrefix(sent, []byte(http2.ClientPreface)) {
		t.Fatalf("no HTTP/2 preface in %d bytes", len(sent))
	}
	fr := http2.NewFramer(io.Discard, bytes.NewReader(sent[len(http2.ClientPreface):]))
	pings, frames := 0, 0
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			break
		}
		frames++
		if p, ok := frame.(*http2.PingFrame); ok && !p.IsAck() {
			pings++
		}
	}
	if frames < 20 {
		t.Fatalf("parsed %d frames of the client's, want at least one per call", frames)
	}
	if pings != 0 {
		t.Errorf("client sent %d PINGs over 20 calls (%d frames)", pings, frames)
	}
}
