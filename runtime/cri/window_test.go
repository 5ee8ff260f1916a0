package cri

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/internal/h2record"
)

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
	rec := &h2record.Listener{Listener: lis}
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
	pings, frames, err := h2record.ClientPings(rec.Sent())
	if err != nil {
		t.Fatal(err)
	}
	if frames < 20 {
		t.Fatalf("parsed %d frames of the client's, want at least one per call", frames)
	}
	if pings != 0 {
		t.Errorf("client sent %d PINGs over 20 calls (%d frames)", pings, frames)
	}
}
