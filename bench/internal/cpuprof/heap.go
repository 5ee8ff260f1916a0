package cpuprof

import (
	"fmt"

	"github.com/google/pprof/profile"
)

// HeapSummary is what the report keeps of one Go heap profile (as
// /debug/pprof/heap serves it): its in-use space, the bytes of the heap
// objects that were live at the last completed GC, by the stacks that
// allocated them, in MB (10^6 bytes). Go's heap profile samples
// allocations (one per 512 KiB allocated, on average) and scales the
// samples up, so the figures are estimates.
type HeapSummary struct {
	// File is the raw profile's file name (beside the report); empty when
	// it was not saved.
	File string `json:"file,omitempty"`
	// InuseMB is the in-use space of all samples.
	InuseMB float64 `json:"inuse_mb"`
	// Flat and Cum are the top functions by flat (allocated in the
	// function itself) and cumulative (in it and what it calls) in-use
	// space, largest first.
	Flat []HeapEntry `json:"top_flat"`
	Cum  []HeapEntry `json:"top_cum"`
}

// HeapEntry is one function's in-use space.
type HeapEntry struct {
	Func   string  `json:"func"`
	FlatMB float64 `json:"flat_mb"`
	CumMB  float64 `json:"cum_mb"`
}

// SummarizeHeap parses a heap profile (gzipped protobuf, as
// /debug/pprof/heap serves it without debug=) and returns the summary of
// its inuse_space/bytes samples with the top n functions each way.
func SummarizeHeap(data []byte, n int) (*HeapSummary, error) {
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("parse heap profile: %w", err)
	}
	vi, err := sampleIndex(p, "inuse_space", "bytes")
	if err != nil {
		return nil, fmt.Errorf("heap profile: %w (not a heap profile?)", err)
	}
	s := &HeapSummary{}
	flat, cum := map[string]float64{}, map[string]float64{}
	for _, smp := range p.Sample {
		v := float64(smp.Value[vi]) / 1e6
		s.InuseMB += v
		tally(flat, cum, stack(smp), v)
	}
	s.Flat = top(flat, cum, n, false, heapEntry)
	s.Cum = top(flat, cum, n, true, heapEntry)
	return s, nil
}

// heapEntry is top's HeapEntry (values in MB).
func heapEntry(fn string, flat, cum float64) HeapEntry {
	return HeapEntry{Func: fn, FlatMB: flat, CumMB: cum}
}
