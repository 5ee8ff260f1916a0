// Package cpuprof fetches a Go CPU profile from an agent's unix socket
// (net/http/pprof's /debug/pprof/profile, which skiff serves on
// <root-dir>/skiff.sock) and summarises it for the benchmark report: the
// CPU sampled, the top functions by flat and cumulative CPU, and the CPU
// of each bucket (see Buckets). SummarizeHeap does the same for a heap
// profile's in-use space. Summarize and SummarizeHeap are pure; Fetch
// does the I/O.
package cpuprof

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Summary is what the report keeps of one CPU profile. Seconds are CPU
// seconds in the profile's samples.
type Summary struct {
	// File is the raw profile's file name (beside the report); empty when
	// it was not saved.
	File string `json:"file,omitempty"`
	// DurationS is the wall time the profile covers.
	DurationS float64 `json:"duration_s"`
	// SampledS is the CPU time of all samples.
	SampledS float64 `json:"sampled_cpu_s"`
	// Flat and Cum are the top functions by flat (the function itself)
	// and cumulative (it and what it calls) CPU, largest first.
	Flat []Entry `json:"top_flat"`
	Cum  []Entry `json:"top_cum"`
	// Buckets is the CPU of every bucket of Buckets(), in that order, empty
	// ones included; they add up to SampledS.
	Buckets []BucketCPU `json:"buckets"`
}

// Entry is one function's CPU.
type Entry struct {
	Func  string  `json:"func"`
	FlatS float64 `json:"flat_s"`
	CumS  float64 `json:"cum_s"`
}

// BucketCPU is the CPU of one bucket.
type BucketCPU struct {
	Name string  `json:"name"`
	What string  `json:"what"`
	CPUS float64 `json:"cpu_s"`
}

// CPUPercent is the sampled CPU as a percentage of one core over the
// profile's duration; NaN without a duration.
func (s *Summary) CPUPercent() float64 {
	if s == nil || s.DurationS <= 0 {
		return nan()
	}
	return 100 * s.SampledS / s.DurationS
}

// Summarize parses a CPU profile (gzipped protobuf, as /debug/pprof/profile
// serves it) and returns its summary with the top n functions each way.
func Summarize(data []byte, n int) (*Summary, error) {
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("parse cpu profile: %w", err)
	}
	vi, err := sampleIndex(p, "cpu", "nanoseconds")
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w (not a CPU profile?)", err)
	}
	s := &Summary{DurationS: time.Duration(p.DurationNanos).Seconds()}
	flat, cum := map[string]float64{}, map[string]float64{}
	bs := Buckets()
	buckets := make([]float64, len(bs))
	for _, smp := range p.Sample {
		v := time.Duration(smp.Value[vi]).Seconds()
		frames := stack(smp)
		s.SampledS += v
		buckets[bucketOf(bs, frames)] += v
		tally(flat, cum, frames, v)
	}
	s.Flat = top(flat, cum, n, false, cpuEntry)
	s.Cum = top(flat, cum, n, true, cpuEntry)
	for i, b := range bs {
		s.Buckets = append(s.Buckets, BucketCPU{Name: b.Name, What: b.What, CPUS: buckets[i]})
	}
	return s, nil
}

// cpuEntry is top's Entry of a CPU profile (values in seconds).
func cpuEntry(fn string, flat, cum float64) Entry { return Entry{Func: fn, FlatS: flat, CumS: cum} }

// sampleIndex is the index of p's sample value of type typ in unit; an
// error lists p's sample types when it has none such.
func sampleIndex(p *profile.Profile, typ, unit string) (int, error) {
	var have []string
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			return i, nil
		}
		have = append(have, st.Type+"/"+st.Unit)
	}
	return 0, fmt.Errorf("no %s/%s sample type (it has %s)", typ, unit, strings.Join(have, ", "))
}

// tally adds a sample's value v to flat (its leaf, frames[0]) and to cum
// (each function on its stack, once however often it recurs).
func tally(flat, cum map[string]float64, frames []string, v float64) {
	if len(frames) > 0 {
		flat[frames[0]] += v
	}
	seen := map[string]bool{}
	for _, f := range frames {
		if !seen[f] {
			seen[f] = true
			cum[f] += v
		}
	}
}

// stack is a sample's function names, leaf first, inlined calls expanded
// (a location's first line is the innermost function).
func stack(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				out = append(out, l.Function.Name)
			}
		}
		if len(loc.Line) == 0 {
			out = append(out, fmt.Sprintf("0x%x", loc.Address))
		}
	}
	return out
}

// top returns the n functions of cum with the largest cumulative (byCum)
// or flat value, largest first (ties by name), those of value 0 left
// out, each made into an E by entry.
func top[E any](flat, cum map[string]float64, n int, byCum bool, entry func(fn string, flat, cum float64) E) []E {
	type fv struct {
		fn        string
		flat, cum float64
	}
	key := func(e fv) float64 { return e.flat }
	if byCum {
		key = func(e fv) float64 { return e.cum }
	}
	all := make([]fv, 0, len(cum))
	for f, c := range cum {
		all = append(all, fv{f, flat[f], c})
	}
	slices.SortFunc(all, func(a, b fv) int {
		if c := cmp.Compare(key(b), key(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.fn, b.fn)
	})
	var out []E
	for _, e := range all[:min(n, len(all))] {
		if key(e) > 0 {
			out = append(out, entry(e.fn, e.flat, e.cum))
		}
	}
	return out
}

// Fetch asks the pprof handler on the unix socket sock for a CPU profile
// of d (whole seconds, at least one) and returns it raw. Blocking for d;
// ctx cancels it.
func Fetch(ctx context.Context, sock string, d time.Duration) ([]byte, error) {
	secs := max(1, int(d/time.Second))
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", sock)
		},
	}}
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("http://agent/debug/pprof/profile?seconds=%d", secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("cpu profile request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cpu profile from %s: %w", sock, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("cpu profile from %s: %w", sock, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cpu profile from %s: %s: %s", sock, resp.Status, bytes.TrimSpace(data))
	}
	return data, nil
}
