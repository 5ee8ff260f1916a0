package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiffnode/skiff/bench/internal/report"
)

// fakeAPIServer serves net/http/pprof's heap profile (this process's,
// after a GC so that it has objects in use) at /debug/pprof/heap with the
// given status (a body of "forbidden" when not 200) and returns a
// clientset for it.
func fakeAPIServer(t *testing.T, status int) kubernetes.Interface {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) {
		if status != http.StatusOK {
			http.Error(w, "forbidden", status)
			return
		}
		runtime.GC()
		pprof.Handler("heap").ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// shimMemory reads the API server's memory by kind and its heap profile,
// saving it beside the report; either failing is recorded, never fatal.
func TestShimMemory(t *testing.T) {
	for _, tc := range []struct {
		name                string
		pid, status         int
		save                bool
		wantMemErr, wantErr string // "": no error (measured)
	}{
		{"both", os.Getpid(), http.StatusOK, true, "", ""},
		{"no profile base", os.Getpid(), http.StatusOK, false, "", ""},
		{"forbidden", os.Getpid(), http.StatusForbidden, true, "", "heap profile from /debug/pprof/heap: forbidden"},
		{"gone", 1 << 30, http.StatusOK, true, "read process 1073741824 status", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bench{log: slog.New(slog.DiscardHandler)}
			if tc.save {
				b.shimHeapPath = filepath.Join(t.TempDir(), "out", "x-external-shim-heap.pprof")
			}
			res := &report.Shim{}
			b.shimMemory(context.Background(), fakeAPIServer(t, tc.status), tc.pid, res)
			checkErr(t, "memory", res.APIMemoryError, tc.wantMemErr, res.APIMemory != nil)
			checkErr(t, "heap", res.APIHeapError, tc.wantErr, res.APIHeap != nil)
			if m := res.APIMemory; m != nil && (m.RSSMB <= 0 || m.AnonMB <= 0 || m.AnonMB > m.RSSMB) {
				t.Errorf("memory = %+v, want RSS and anon within it", *m)
			}
			if h := res.APIHeap; h != nil && (h.InuseMB <= 0 || len(h.Cum) == 0) {
				t.Errorf("heap = %+v, want bytes in use and top functions", *h)
			}
			wantFile := ""
			if tc.save && tc.wantErr == "" {
				wantFile = "x-external-shim-heap.pprof"
			}
			if res.APIHeap != nil && res.APIHeap.File != wantFile {
				t.Errorf("heap profile file %q, want %q", res.APIHeap.File, wantFile)
			}
			if _, err := os.Stat(b.shimHeapPath); tc.save && (err == nil) != (wantFile != "") {
				t.Errorf("saved profile: %v, want one only when taken", err)
			}
		})
	}
}

// checkErr checks a recorded error against want ("": none, and the
// figure measured; else the error contains want and nothing measured).
func checkErr(t *testing.T, what, got, want string, measured bool) {
	t.Helper()
	if want == "" && (got != "" || !measured) {
		t.Errorf("%s: error %q, measured %v; want measured", what, got, measured)
	}
	if want != "" && (!strings.Contains(got, want) || measured) {
		t.Errorf("%s: error %q, measured %v; want an error with %q, nothing measured", what, got, measured, want)
	}
}

// Data that is no heap profile (a CPU profile, an error page) is an error
// and leaves no file.
func TestSummarizeHeapProfileRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad-shim-heap.pprof")
	var cpu bytes.Buffer
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	if err := p.Write(&cpu); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"an error page": []byte("<html>404</html>"), "a CPU profile": cpu.Bytes()} {
		if _, err := summarizeHeapProfile(path, data); err == nil {
			t.Errorf("summarizeHeapProfile of %s: no error", name)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was written for no profile: %v", err)
	}
}
