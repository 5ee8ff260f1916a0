package cri

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestReconnectsPromptlyAfterRuntimeRestart: while the runtime is down the
// client keeps dialing at short intervals (gRPC's default back-off would
// dial 3 times in 3 s and then ever more rarely, up to 120 s apart), and
// the first calls after the runtime is back succeed.
func TestReconnectsPromptlyAfterRuntimeRestart(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	f := newFakeCRI()
	start := func() *grpc.Server {
		lis, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		runtimeapi.RegisterRuntimeServiceServer(srv, f)
		go func() { _ = srv.Serve(lis) }() // stopped below or in Cleanup
		return srv
	}
	srv := start()
	var dials atomic.Int32
	dialer := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	})
	ctx := context.Background()
	r, err := newRuntime(ctx, "unix://"+sock, time.Second, dialer)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	srv.Stop() // the runtime goes away (and its socket with it)
	down := time.Now()
	before := dials.Load()
	for time.Since(down) < 3*time.Second {
		if _, err := r.Version(ctx); err == nil {
			t.Fatal("Version succeeded while the runtime is down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := dials.Load() - before; n < 5 {
		t.Errorf("%d dials in 3 s of outage, want at least 5 (reconnect back-off too long)", n)
	}
	srv = start()
	defer srv.Stop()
	back := time.Now()
	for {
		if _, err := r.Version(ctx); err == nil {
			break
		} else if time.Since(back) > 2*time.Second {
			t.Fatalf("Version still fails 2 s after the runtime returned: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("reconnected %v after the runtime returned", time.Since(back).Round(time.Millisecond))
}
