package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiffnode/skiff/bench/internal/cpuprof"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// shimHeapTimeout bounds the fetch of skiff-apiserver's heap profile.
const shimHeapTimeout = 30 * time.Second

// shimHeapEndpoint is net/http/pprof's heap profile, which skiff-apiserver
// serves through its API (to the admin: a non-resource URL).
const shimHeapEndpoint = "/debug/pprof/heap"

// shimMemory records in res where skiff-apiserver (pid) has its memory at
// the end of the steady window: first its RSS by kind from
// /proc/<pid>/status (before the fetch, whose response the server
// allocates), then its heap profile, fetched through the API with cs,
// summarised and, with b.shimHeapPath set, saved there raw. Neither fails
// the scenario: a failure is recorded in res.APIMemoryError or
// res.APIHeapError.
func (b *bench) shimMemory(ctx context.Context, cs kubernetes.Interface, pid int, res *report.Shim) {
	if m, err := procfs.ReadMemory("/proc", pid); err != nil {
		res.APIMemoryError = err.Error()
	} else {
		mb := m.MB()
		res.APIMemory = &mb
	}
	data, err := fetchHeapProfile(ctx, cs.CoreV1().RESTClient())
	if err == nil {
		res.APIHeap, err = summarizeHeapProfile(b.shimHeapPath, data)
	}
	if err != nil {
		res.APIHeapError = err.Error()
		b.log.Warn("skiff-apiserver's heap profile", "err", err)
	}
	if res.APIMemory != nil && res.APIHeap != nil {
		b.log.Info("shim memory", "rss_mb", res.APIMemory.RSSMB, "anon_mb", res.APIMemory.AnonMB,
			"file_mb", res.APIMemory.FileMB, "heap_inuse_mb", res.APIHeap.InuseMB)
	}
}

// fetchHeapProfile returns the API server's heap profile (gzipped
// protobuf) from shimHeapEndpoint through rc, within shimHeapTimeout; a
// status other than 2xx is an error.
func fetchHeapProfile(ctx context.Context, rc rest.Interface) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, shimHeapTimeout)
	defer cancel()
	data, err := rc.Get().AbsPath(shimHeapEndpoint).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("heap profile from %s: %w", shimHeapEndpoint, err)
	}
	return data, nil
}

// summarizeHeapProfile returns the summary of the heap profile data (the
// top profileTop functions each way) and, with path set, writes data to
// path raw (creating its directory) and sets File to its base name. Data
// that is no heap profile is an error and writes nothing.
func summarizeHeapProfile(path string, data []byte) (*cpuprof.HeapSummary, error) {
	s, err := cpuprof.SummarizeHeap(data, profileTop)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return s, nil
	}
	if err := writeProfileFile(path, data, "heap profile"); err != nil {
		return nil, err
	}
	s.File = filepath.Base(path)
	return s, nil
}
