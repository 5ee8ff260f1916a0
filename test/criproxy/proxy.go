// Package criproxy is a fault-injecting gRPC proxy for tests: it sits
// between a CRI client (skiff) and a container runtime's socket, forwards
// every call unchanged (the CRI services and containerd's own API, which
// skiff uses for exit events over the same socket), and makes the calls its
// faults select fail, hang or break off part way. It is the role of the
// kubelet's test/e2e_node/criproxy, which wraps the CRI services of
// k8s.io/kubernetes only (a module skiff's may not import) and not
// containerd's API; decision 106 records why this one is a raw proxy.
//
// Which call a fault hits is reproducible: the decision for the n-th call
// of a method is a hash of the seed, the method and n, so the same run of
// calls per method meets the same faults. Nothing here is production code.
package criproxy

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// CRI service prefixes: only these methods are subject to faults.
const (
	runtimeService = "/runtime.v1.RuntimeService/"
	imageService   = "/runtime.v1.ImageService/"
)

// Fault selects CRI calls and says what happens to them.
type Fault struct {
	// Methods are CRI method names ("RunPodSandbox"); empty selects every
	// CRI method.
	Methods []string
	// Rate is the fraction of selected calls hit, in (0, 1]; 0 means 1.
	Rate float64
	// Times is how many calls the fault hits at most; 0 is no limit.
	Times int
	// Delay holds a hit call this long before anything else (bounded by
	// the caller's deadline).
	Delay time.Duration
	// Code is the error a hit call returns (codes.OK: none, the call is
	// only delayed or held).
	Code codes.Code
	// Reached forwards a hit call to the runtime first: the runtime does
	// the work and the client gets Code instead of the answer.
	Reached bool
	// Cut, with Reached, cancels the forwarded call if it is still running
	// after this long: the runtime is stopped part way (a pull mid-way).
	Cut time.Duration
	// Hold, with Reached, holds the runtime's answer this long before the
	// client gets it or Code: a call that hangs past the client's timeout
	// although the runtime did it.
	Hold time.Duration
}

func (f Fault) selects(method string) bool {
	if !strings.HasPrefix(method, runtimeService) && !strings.HasPrefix(method, imageService) {
		return false
	}
	if len(f.Methods) == 0 {
		return true
	}
	name := method[strings.LastIndexByte(method, '/')+1:]
	for _, m := range f.Methods {
		if m == name {
			return true
		}
	}
	return false
}

// Stats counts one method's calls.
type Stats struct {
	Calls, Hit int
}

// Proxy forwards a listening socket's gRPC calls to the runtime's socket.
type Proxy struct {
	seed     uint64
	upstream *grpc.ClientConn
	srv      *grpc.Server
	ln       net.Listener
	serveErr chan error
	pumps    sync.WaitGroup

	mu     sync.Mutex
	faults []Fault
	hits   []int // per fault
	calls  map[string]int
	stats  map[string]*Stats
}

// Start listens on the unix socket listen (removing a stale one) and
// forwards to the unix socket upstream. Close stops it.
func Start(listen, upstream string, seed uint64) (*Proxy, error) {
	conn, err := grpc.NewClient("unix://"+upstream,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		return nil, fmt.Errorf("criproxy: dial %s: %w", upstream, err)
	}
	if err := os.Remove(listen); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = conn.Close()
		return nil, fmt.Errorf("criproxy: %w", err)
	}
	ln, err := net.Listen("unix", listen)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("criproxy: %w", err)
	}
	p := &Proxy{seed: seed, upstream: conn, ln: ln, serveErr: make(chan error, 1),
		calls: map[string]int{}, stats: map[string]*Stats{}}
	p.srv = grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.UnknownServiceHandler(p.handle),
		grpc.MaxRecvMsgSize(math.MaxInt32), grpc.MaxSendMsgSize(math.MaxInt32))
	go func() { p.serveErr <- p.srv.Serve(ln) }()
	return p, nil
}

// Endpoint is the proxy's CRI endpoint (unix://...).
func (p *Proxy) Endpoint() string { return "unix://" + p.ln.Addr().String() }

// SetFaults replaces the faults; for each call the first fault that selects
// it and hits decides (each with its own draw: two faults of Rate 0.05 hit
// about 0.05 and 0.0475 of the calls). nil forwards everything unchanged.
func (p *Proxy) SetFaults(faults ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append([]Fault(nil), faults...)
	p.hits = make([]int, len(faults))
}

// Stats returns the calls and hits per CRI method since Start.
func (p *Proxy) Stats() map[string]Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Stats, len(p.stats))
	for m, s := range p.stats {
		out[m[strings.LastIndexByte(m, '/')+1:]] = *s
	}
	return out
}

// Close stops serving (calls in flight are cut) and waits for every
// goroutine the proxy started.
func (p *Proxy) Close() error {
	p.srv.Stop()
	err := <-p.serveErr
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	p.pumps.Wait()
	return errors.Join(err, p.upstream.Close())
}

// decide counts the call and returns the fault that hits it, if any.
func (p *Proxy) decide(method string) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.calls[method]
	p.calls[method] = n + 1
	s := p.stats[method]
	if s == nil {
		s = &Stats{}
		p.stats[method] = s
	}
	s.Calls++
	for i, f := range p.faults {
		if !f.selects(method) || (f.Times > 0 && p.hits[i] >= f.Times) {
			continue
		}
		if f.Rate > 0 && f.Rate < 1 && draw(p.seed, method, n, i) >= f.Rate {
			continue
		}
		p.hits[i]++
		s.Hit++
		return f, true
	}
	return Fault{}, false
}

// draw is a uniform number in [0, 1) fixed by seed, method, call number and
// fault: the n-th output of a splitmix64 stream keyed by the others, so
// that faults with rates draw independently.
func draw(seed uint64, method string, n, fault int) float64 {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%s/%d", seed, method, fault)
	x := h.Sum64() + uint64(n+1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// handle forwards one call of any method, applying its fault.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	ctx := ss.Context()
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "criproxy: no method")
	}
	f, hit := p.decide(method)
	if hit && f.Delay > 0 {
		if err := sleep(ctx, f.Delay); err != nil {
			return err
		}
	}
	if hit && !f.Reached && f.Code != codes.OK {
		return status.Errorf(f.Code, "criproxy: injected %s into %s", f.Code, method)
	}
	upCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		upCtx = metadata.NewOutgoingContext(upCtx, md.Copy())
	}
	if hit && f.Reached && f.Cut > 0 {
		t := time.AfterFunc(f.Cut, cancel)
		defer t.Stop()
	}
	if !hit || !f.Reached {
		return p.forward(upCtx, method, ss, nil)
	}
	return p.forward(upCtx, method, ss, &f)
}

// forward copies the call's messages both ways. With reached (a Reached
// fault) the runtime's answers are kept until its call ends, held for
// reached.Hold, then replaced by reached.Code unless that is OK; a call
// Cut part way returns reached.Code (Unavailable if OK).
func (p *Proxy) forward(ctx context.Context, method string, ss grpc.ServerStream, reached *Fault) error {
	cs, err := p.upstream.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	p.pumps.Add(1)
	go func() { // client -> runtime; ends with the client's half or the call
		defer p.pumps.Done()
		for {
			var m []byte
			if err := ss.RecvMsg(&m); err != nil {
				_ = cs.CloseSend()
				return
			}
			if err := cs.SendMsg(&m); err != nil {
				return
			}
		}
	}()
	var held [][]byte
	if reached == nil {
		if md, err := cs.Header(); err == nil {
			_ = ss.SendHeader(md)
		}
	}
	for {
		var m []byte
		err := cs.RecvMsg(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if reached != nil && reached.Cut > 0 && ctx.Err() != nil && ss.Context().Err() == nil {
				code := reached.Code
				if code == codes.OK {
					code = codes.Unavailable
				}
				return status.Errorf(code, "criproxy: %s cut part way", method)
			}
			return err
		}
		if reached != nil {
			held = append(held, m)
			continue
		}
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
	if reached != nil {
		if err := sleep(ss.Context(), reached.Hold); err != nil {
			return err
		}
		if reached.Code != codes.OK {
			return status.Errorf(reached.Code, "criproxy: injected %s into %s after the runtime was reached", reached.Code, method)
		}
		for _, m := range held {
			if err := ss.SendMsg(&m); err != nil {
				return err
			}
		}
	}
	ss.SetTrailer(cs.Trailer())
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}
