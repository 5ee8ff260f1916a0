package cpuprof

import (
	"bytes"
	"context"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// fakeProfile builds a CPU profile of 10 s whose samples are the given
// stacks (leaf first), each with its CPU in milliseconds.
func fakeProfile(t *testing.T, samples map[string]int64) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: int64(10 * time.Second),
	}
	values := map[string][]int64{}
	for st, ms := range samples {
		values[st] = []int64{ms / 10, ms * 1_000_000}
	}
	return writeProfile(t, p, values)
}

// writeProfile adds to p a sample of the given values for each stack of
// samples (function names separated by ';', leaf first; one location per
// function) and returns p written as /debug/pprof serves it (gzipped).
func writeProfile(t *testing.T, p *profile.Profile, samples map[string][]int64) []byte {
	t.Helper()
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: f}}}
		locs[name] = l
		p.Location = append(p.Location, l)
		return l
	}
	for st, v := range samples {
		s := &profile.Sample{Value: v}
		for fn := range strings.SplitSeq(st, ";") {
			s.Location = append(s.Location, loc(fn))
		}
		p.Sample = append(p.Sample, s)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	probeStack = "syscall.Syscall;google.golang.org/grpc.(*ClientConn).Invoke;" +
		"github.com/skiffnode/skiff/runtime/cri.(*Runtime).ExecSync;github.com/skiffnode/skiff/probes.(*worker).run"
	readerStack = "syscall.Syscall;google.golang.org/grpc/internal/transport.(*http2Client).reader"
	schedStack  = "runtime.netpoll;runtime.findRunnable;runtime.schedule;runtime.mstart"
	assistStack = "runtime.gcAssistAlloc;runtime.mallocgc;github.com/skiffnode/skiff/probes.(*worker).run"
	relistStack = "syscall.Syscall;github.com/skiffnode/skiff/agent.(*Agent).relist;github.com/skiffnode/skiff/agent.(*Agent).relistLoop"
	otherStack  = "syscall.Syscall;os.ReadFile"
)

func bucketCPU(s *Summary) map[string]float64 {
	out := map[string]float64{}
	for _, b := range s.Buckets {
		out[b.Name] = b.CPUS
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarize(t *testing.T) {
	data := fakeProfile(t, map[string]int64{
		probeStack: 300, readerStack: 200, schedStack: 250, assistStack: 50, relistStack: 100, otherStack: 100,
	})
	s, err := Summarize(data, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.DurationS, 10) || !near(s.SampledS, 1.0) || !near(s.CPUPercent(), 10) {
		t.Errorf("duration %v, sampled %v, cpu %v %%; want 10, 1.0, 10", s.DurationS, s.SampledS, s.CPUPercent())
	}
	// syscall.Syscall is the leaf of 700 ms of samples.
	if len(s.Flat) != 3 || s.Flat[0].Func != "syscall.Syscall" || !near(s.Flat[0].FlatS, 0.7) || !near(s.Flat[0].CumS, 0.7) {
		t.Errorf("top flat = %+v, want syscall.Syscall 0.7 s first, 3 entries", s.Flat)
	}
	// The probe worker is in the probe and the assist stacks: 350 ms
	// cumulative, none flat.
	want := []Entry{{"syscall.Syscall", 0.7, 0.7}, {"github.com/skiffnode/skiff/probes.(*worker).run", 0, 0.35}}
	for i, w := range want {
		if g := s.Cum[i]; g.Func != w.Func || !near(g.FlatS, w.FlatS) || !near(g.CumS, w.CumS) {
			t.Errorf("top cum[%d] = %+v, want %+v", i, g, w)
		}
	}
	got := bucketCPU(s)
	for name, w := range map[string]float64{
		"GC": 0.05, "probes": 0.3, "relist": 0.1, "gRPC transport": 0.2, "scheduler": 0.25, "other": 0.1, "event stream": 0,
	} {
		if !near(got[name], w) {
			t.Errorf("bucket %q = %v s, want %v", name, got[name], w)
		}
	}
	sum := 0.0
	for _, b := range s.Buckets {
		sum += b.CPUS
	}
	if len(s.Buckets) != len(Buckets()) || !near(sum, s.SampledS) {
		t.Errorf("%d buckets adding to %v s; want %d adding to %v", len(s.Buckets), sum, len(Buckets()), s.SampledS)
	}
}

func TestSummarizeRejects(t *testing.T) {
	if _, err := Summarize([]byte("not a profile"), 5); err == nil {
		t.Error("Summarize of garbage: no error")
	}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := Summarize(buf.Bytes(), 5); err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("Summarize of a heap profile: err %v, want one naming cpu", err)
	}
}

func TestBucketOrder(t *testing.T) {
	bs := Buckets()
	tests := []struct {
		stack, want string
	}{
		{assistStack, "GC"},    // GC before the probe worker it ran in
		{probeStack, "probes"}, // probes before gRPC
		{readerStack, "gRPC transport"},
		{"x;github.com/skiffnode/skiff/runtime/containerd.(*ExitWatcher).watchOnce", "event stream"},
		{"x;github.com/skiffnode/skiff/agent.(*relistLoop).watchExits.func1", "event stream"},
		{"syscall.Syscall;github.com/skiffnode/skiff/agent.(*relistLoop).list;github.com/skiffnode/skiff/agent.(*relistLoop).once", "relist"},
		{"x;github.com/skiffnode/skiff/agent.(*Agent).killOrphans;github.com/skiffnode/skiff/agent.(*Agent).listed;github.com/skiffnode/skiff/agent.(*relistLoop).once", "relist"},
		{relistStack, "relist"},
		{"x;github.com/skiffnode/skiff/agent.(*podWorker).publishStatus;github.com/skiffnode/skiff/agent.(*podWorker).run", "status/API"},
		{"x;github.com/skiffnode/skiff/agent.(*podWorker).sync", "pod workers"},
		{"x;github.com/skiffnode/skiff/agent.(*Agent).runGC", "other skiff"},
		{schedStack, "scheduler"},
		{otherStack, "other"},
		{"", "other"},
	}
	for _, tt := range tests {
		var frames []string
		if tt.stack != "" {
			frames = strings.Split(tt.stack, ";")
		}
		if got := bs[bucketOf(bs, frames)].Name; got != tt.want {
			t.Errorf("bucket of %q = %q, want %q", tt.stack, got, tt.want)
		}
	}
}

// Fetch asks for whole seconds on the unix socket and returns the body.
func TestFetch(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("seconds") != "2" {
			http.Error(w, "seconds="+r.URL.Query().Get("seconds"), http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("PROFILE"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	data, err := Fetch(context.Background(), sock, 2500*time.Millisecond)
	if err != nil || string(data) != "PROFILE" {
		t.Errorf("Fetch = %q, %v; want PROFILE", data, err)
	}
	mux.HandleFunc("GET /debug/pprof/", http.NotFound)
	if _, err := Fetch(context.Background(), filepath.Join(t.TempDir(), "none.sock"), time.Second); err == nil {
		t.Error("Fetch from a missing socket: no error")
	}
}
