package report

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/bench/internal/cpuprof"
	"github.com/skiffnode/skiff/bench/internal/procfs"
)

// shimHeap is a heap profile's summary of 60 MB in use with n functions
// each way, the i-th (from 0) of 20-i MB cumulative and 10-i/2 MB flat.
func shimHeap(n int) *cpuprof.HeapSummary {
	h := &cpuprof.HeapSummary{File: "2026-03-01-full-external-shim-heap.pprof", InuseMB: 60}
	for i := range n {
		h.Cum = append(h.Cum, cpuprof.HeapEntry{Func: fmt.Sprintf("cum.f%d", i), CumMB: float64(20 - i)})
		h.Flat = append(h.Flat, cpuprof.HeapEntry{Func: fmt.Sprintf("flat.f%d", i), FlatMB: 10 - float64(i)/2, CumMB: 10})
	}
	return h
}

// shimMemory is shimUnder with its API server's memory by kind and heap.
func shimMemory() *Shim {
	s := shimUnder()
	s.Shim.RSSMeanMB, s.Shim.RSSMaxMB = 140, 146
	s.APIMemory = &procfs.MemoryMB{RSSMB: 145, AnonMB: 118.2, FileMB: 26.4, ShmemMB: 0.4}
	s.APIHeap = shimHeap(15)
	return s
}

func TestShimMemorySection(t *testing.T) {
	heapFailed := shimMemory()
	heapFailed.APIHeap, heapFailed.APIHeapError = nil, "heap profile: the server could not find the requested resource"
	memFailed := shimMemory()
	memFailed.APIMemory, memFailed.APIMemoryError = nil, "read process 42 status: no such file or directory"
	memFailed.APIHeap = shimHeap(2)
	memFailed.APIHeap.File = ""
	for _, tc := range []struct {
		name    string
		shim    *Shim
		want    []string
		notWant []string
	}{
		{"both", shimMemory(), []string{
			"| API server memory at the end of the window (110 pods + 50 Services + 200 ConfigMaps, service proxy + DNS on) | skiff-apiserver |\n|---|---|\n",
			"| RSS / anon / file / shmem (/proc/<pid>/status) | 145.0 / 118.2 / 26.4 / 0.4 MB |\n",
			"| heap in use (its heap profile: objects live at the last GC) | 60.0 MB (41 % of RSS) |\n",
			"skiff-apiserver's heap profile after the window (`2026-03-01-full-external-shim-heap.pprof`, 60.0 MB in use): the top functions by cumulative",
			"| # | by cumulative | in use | by flat | in use |\n|---|---|---|---|---|\n| 1 | `cum.f0` | 20.0 MB (33 %) | `flat.f0` | 10.0 MB (17 %) |\n",
			"| 10 | `cum.f9` | 11.0 MB (18 %) | `flat.f9` | 5.5 MB (9 %) |\n\n",
		}, []string{"| 11 | `", "unavailable"}},
		{"heap failed", heapFailed, []string{
			"| RSS / anon / file / shmem (/proc/<pid>/status) | 145.0 / 118.2 / 26.4 / 0.4 MB |\n",
			"| heap in use (its heap profile: objects live at the last GC) | - |\n",
			"skiff-apiserver's heap profile: unavailable: heap profile: the server could not find the requested resource\n",
		}, []string{"by cumulative"}},
		{"memory failed, profile not saved", memFailed, []string{
			"| RSS / anon / file / shmem (/proc/<pid>/status) | - |\n",
			"| heap in use (its heap profile: objects live at the last GC) | 60.0 MB |\n",
			"API server memory by kind: unavailable: read process 42 status: no such file or directory\n",
			"skiff-apiserver's heap profile after the window (not saved, 60.0 MB in use)",
			"| 2 | `cum.f1` | 19.0 MB (32 %) | `flat.f1` | 9.5 MB (16 %) |\n\n",
		}, []string{"| 3 | `"}},
		{"not measured (older results)", shimUnder(), nil, []string{"API server memory", "heap"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Markdown(&b, &Results{Mode: "full", Runs: []Run{{Runtime: RuntimeExternal, API: kubeAPI(), Shim: tc.shim}}}, IssueLimits, nil); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, b.String())
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(b.String(), nw) {
					t.Errorf("report has %q:\n%s", nw, b.String())
				}
			}
		})
	}
}

// The memory and heap fields are left out when not measured and survive
// a round trip.
func TestShimMemoryJSON(t *testing.T) {
	data, err := json.Marshal(shimUnder())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "api_server_memory") || strings.Contains(string(data), "api_server_heap") {
		t.Errorf("unmeasured memory in JSON: %s", data)
	}
	failed := shimMemory()
	failed.APIHeap, failed.APIHeapError = nil, "no answer"
	if data, err = json.Marshal(failed); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"api_server_memory":{"rss_mb":145,"rss_anon_mb":118.2,"rss_file_mb":26.4,"rss_shmem_mb":0.4}`, `"api_server_heap_error":"no answer"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s: %s", key, data)
		}
	}
	if data, err = json.Marshal(shimMemory()); err != nil {
		t.Fatal(err)
	}
	var out Shim
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.APIMemory == nil || *out.APIMemory != *shimMemory().APIMemory || out.APIHeap == nil || out.APIHeap.InuseMB != 60 ||
		len(out.APIHeap.Cum) != 15 || out.APIHeap.Flat[1] != (cpuprof.HeapEntry{Func: "flat.f1", FlatMB: 9.5, CumMB: 10}) || out.APIHeapError != "" {
		t.Errorf("round trip: %+v", out)
	}
}
