package cpuprof

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

const (
	etcdRun     = "github.com/skiffnode/skiff/shim/etcd.run"
	cacheAdd    = "k8s.io/apiserver/pkg/storage/cacher.(*watchCache).Add"
	cacheEvent  = "k8s.io/apiserver/pkg/storage/cacher.(*watchCache).processEvent"
	jsonObject  = "encoding/json.(*decodeState).object"
	jsonDecode  = "encoding/json.Unmarshal"
	malg        = "runtime.malg"
	newproc     = "runtime.newproc1"
	growSlice   = "bytes.growSlice"
	cacheStack  = cacheEvent + ";" + cacheAdd + ";" + etcdRun
	decodeStack = jsonObject + ";" + jsonObject + ";" + jsonDecode + ";" + etcdRun // recursion
	malgStack   = malg + ";" + newproc
	freedStack  = growSlice + ";" + jsonDecode + ";" + etcdRun // allocated, all freed
)

// fakeHeapProfile builds a heap profile whose samples are the given stacks
// (leaf first), each with its in-use and its allocated space in bytes.
func fakeHeapProfile(t *testing.T, samples map[string][2]int64) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 * 1024,
	}
	values := map[string][]int64{}
	for st, v := range samples {
		values[st] = []int64{v[1] / 1000, v[1], v[0] / 1000, v[0]}
	}
	return writeProfile(t, p, values)
}

func TestSummarizeHeap(t *testing.T) {
	data := fakeHeapProfile(t, map[string][2]int64{
		cacheStack: {30e6, 40e6}, decodeStack: {12e6, 20e6}, malgStack: {2e6, 2e6}, freedStack: {0, 50e6},
	})
	tests := []struct {
		name      string
		n         int
		flat, cum []HeapEntry
	}{
		{"top 3", 3,
			[]HeapEntry{{cacheEvent, 30, 30}, {jsonObject, 12, 12}, {malg, 2, 2}},
			[]HeapEntry{{etcdRun, 0, 42}, {cacheAdd, 0, 30}, {cacheEvent, 30, 30}}},
		// Functions with nothing in use (bytes.growSlice; flat: all but
		// the leaves) are left out; a recursive function counts once.
		{"all", 20,
			[]HeapEntry{{cacheEvent, 30, 30}, {jsonObject, 12, 12}, {malg, 2, 2}},
			[]HeapEntry{{etcdRun, 0, 42}, {cacheAdd, 0, 30}, {cacheEvent, 30, 30}, {jsonObject, 12, 12},
				{jsonDecode, 0, 12}, {malg, 2, 2}, {newproc, 0, 2}}},
		{"none", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := SummarizeHeap(data, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !near(s.InuseMB, 44) || s.File != "" {
				t.Errorf("in use %v MB, file %q; want 44 MB, none", s.InuseMB, s.File)
			}
			eq := func(a, b HeapEntry) bool {
				return a.Func == b.Func && near(a.FlatMB, b.FlatMB) && near(a.CumMB, b.CumMB)
			}
			if !slices.EqualFunc(s.Flat, tt.flat, eq) {
				t.Errorf("top flat = %+v, want %+v", s.Flat, tt.flat)
			}
			if !slices.EqualFunc(s.Cum, tt.cum, eq) {
				t.Errorf("top cum = %+v, want %+v", s.Cum, tt.cum)
			}
		})
	}
}

func TestSummarizeHeapRejects(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"garbage", []byte("not a profile"), "parse heap profile"},
		{"a CPU profile", fakeProfile(t, map[string]int64{otherStack: 100}), "no inuse_space/bytes sample type (it has samples/count, cpu/nanoseconds)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := SummarizeHeap(tt.data, 5); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SummarizeHeap: err %v, want one with %q", err, tt.want)
			}
		})
	}
}

// The Go runtime's own heap profile (as /debug/pprof/heap writes it) is
// read: a live 8 MB buffer shows in its in-use space and its top entries.
func TestSummarizeHeapOfGo(t *testing.T) {
	live := make([]byte, 8<<20)
	runtime.GC() // the profile's in-use space is as of the last GC
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(live)
	s, err := SummarizeHeap(buf.Bytes(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if s.InuseMB < 8 || len(s.Flat) == 0 || len(s.Cum) == 0 || s.Cum[0].CumMB < 8 {
		t.Errorf("own heap: %+v; want at least the 8 MB buffer in use", s)
	}
}
