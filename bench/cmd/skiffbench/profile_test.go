package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"
)

// saveProfile writes the raw profile and names it in the summary; data
// that is no profile is an error and leaves no file.
func TestSaveProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("cpu profiling unavailable:", err)
	}
	spins := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		spins++ // CPU for the profile to sample
	}
	t.Logf("%d spins", spins)
	pprof.StopCPUProfile()
	path := filepath.Join(t.TempDir(), "out", "x-managed-steady.pprof")
	s, err := saveProfile(path, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if s.File != "x-managed-steady.pprof" || s.DurationS <= 0 {
		t.Errorf("summary = %+v, want File x-managed-steady.pprof and a duration", s)
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, buf.Bytes()) {
		t.Errorf("saved profile: %d bytes, %v; want the %d bytes fetched", len(data), err, buf.Len())
	}
	bad := filepath.Join(t.TempDir(), "bad.pprof")
	if _, err := saveProfile(bad, []byte("<html>404</html>")); err == nil {
		t.Error("saveProfile of no profile: no error")
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was written for no profile: %v", err)
	}
}
