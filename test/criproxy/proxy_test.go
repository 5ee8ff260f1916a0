package criproxy

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime answers Version and RunPodSandbox and counts the calls that
// reached it; RunPodSandbox blocks until its context ends when block is set.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu       sync.Mutex
	runs     int
	canceled int
	block    bool
}

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "1"}, nil
}

func (f *fakeRuntime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	f.mu.Lock()
	f.runs++
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		f.mu.Lock()
		f.canceled++
		f.mu.Unlock()
		return nil, ctx.Err()
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb-" + req.GetConfig().GetMetadata().GetName()}, nil
}

func (f *fakeRuntime) counts() (runs, canceled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs, f.canceled
}

// setup serves fake behind a proxy and returns a client connection to the
// proxy.
func setup(t *testing.T, fake *fakeRuntime, seed uint64) (*Proxy, *grpc.ClientConn) {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "runtime.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, fake)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	p, err := Start(filepath.Join(dir, "proxy.sock"), ln.Addr().String(), seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	conn, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return p, conn
}

func run(ctx context.Context, c runtimeapi.RuntimeServiceClient, name string) (string, error) {
	resp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{
		Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name}}})
	return resp.GetPodSandboxId(), err
}

// TestFaults: each kind of fault does what Fault's fields say, seen from
// the client and from the runtime.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     Fault
		block     bool
		timeout   time.Duration
		wantCode  codes.Code
		wantRuns  int // calls that reached the runtime
		wantCanc  int // of them, canceled part way
		wantAbove time.Duration
	}{
		{name: "none", fault: Fault{Methods: []string{"Version"}, Code: codes.Unknown}, wantCode: codes.OK, wantRuns: 1},
		{name: "error before the runtime", fault: Fault{Methods: []string{"RunPodSandbox"}, Code: codes.Unavailable}, wantCode: codes.Unavailable},
		{name: "error after the runtime", fault: Fault{Code: codes.Unknown, Reached: true}, wantCode: codes.Unknown, wantRuns: 1},
		{name: "delay", fault: Fault{Delay: 200 * time.Millisecond}, wantCode: codes.OK, wantRuns: 1, wantAbove: 200 * time.Millisecond},
		{name: "delay past the deadline", fault: Fault{Delay: time.Minute}, timeout: 200 * time.Millisecond, wantCode: codes.DeadlineExceeded},
		{name: "held past the deadline", fault: Fault{Reached: true, Hold: time.Minute}, timeout: 300 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, wantRuns: 1},
		{name: "cut part way", fault: Fault{Reached: true, Cut: 100 * time.Millisecond, Code: codes.Unavailable}, block: true,
			wantCode: codes.Unavailable, wantRuns: 1, wantCanc: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeRuntime{block: tc.block}
			p, conn := setup(t, fake, 1)
			p.SetFaults(tc.fault)
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			start := time.Now()
			id, err := run(ctx, runtimeapi.NewRuntimeServiceClient(conn), "a")
			if got := status.Code(err); got != tc.wantCode {
				t.Fatalf("RunPodSandbox: %v, want code %s", err, tc.wantCode)
			}
			if err == nil && id != "sb-a" {
				t.Errorf("RunPodSandbox answered %q, want sb-a (the runtime's answer)", id)
			}
			if d := time.Since(start); d < tc.wantAbove {
				t.Errorf("took %s, want at least %s", d, tc.wantAbove)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				runs, canc := fake.counts()
				if runs == tc.wantRuns && canc == tc.wantCanc {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("runtime saw %d calls, %d canceled; want %d, %d", runs, canc, tc.wantRuns, tc.wantCanc)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if s := p.Stats()["RunPodSandbox"]; s.Calls != 1 {
				t.Errorf("stats %+v, want 1 call", s)
			}
		})
	}
}

// TestRateIsReproducible: a Rate fault hits the same calls for the same
// seed, about Rate of them, and a Times limit caps the hits.
func TestRateIsReproducible(t *testing.T) {
	pattern := func(seed uint64, f Fault) []bool {
		_, conn := func() (*Proxy, *grpc.ClientConn) {
			p, c := setup(t, &fakeRuntime{}, seed)
			p.SetFaults(f)
			return p, c
		}()
		c := runtimeapi.NewRuntimeServiceClient(conn)
		out := make([]bool, 200)
		for i := range out {
			_, err := c.Version(t.Context(), &runtimeapi.VersionRequest{})
			out[i] = err != nil
		}
		return out
	}
	count := func(b []bool) (n int) {
		for _, x := range b {
			if x {
				n++
			}
		}
		return n
	}
	f := Fault{Rate: 0.1, Code: codes.Unavailable}
	a, b, other := pattern(7, f), pattern(7, f), pattern(8, f)
	if n := count(a); n < 8 || n > 35 {
		t.Errorf("rate 0.1 hit %d of 200 calls", n)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 gave different hits at call %d", i)
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == other[i]
	}
	if same {
		t.Error("seeds 7 and 8 hit the same calls")
	}
	f.Rate, f.Times = 1, 3
	if n := count(pattern(7, f)); n != 3 {
		t.Errorf("Times 3 hit %d calls", n)
	}
}

// TestOtherServicesPass: methods outside the CRI (containerd's own API,
// here the health service) are forwarded and never hit.
func TestOtherServicesPass(t *testing.T) {
	p, conn := setup(t, &fakeRuntime{}, 1)
	p.SetFaults(Fault{Code: codes.Unavailable})
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health through the proxy: %v, %v", resp, err)
	}
	if _, err := runtimeapi.NewRuntimeServiceClient(conn).Version(t.Context(), &runtimeapi.VersionRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("Version: %v, want Unavailable", err)
	}
}
