package cgroups

import (
	"os"
	"path/filepath"
	"testing"

	libcg "github.com/opencontainers/cgroups"
)

// TestReadPressure: the kernel's PSI files of a cgroup v2 directory (and
// /proc/pressure's, named without the suffix) are parsed, totals as the
// kernel's microseconds; a missing or malformed file gives no figures.
func TestReadPressure(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu.pressure", "some avg10=1.50 avg60=0.25 avg300=0.05 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n")
	write("memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	write("io.pressure", "some avg10=x\n")
	p := readPressure(dir, ".pressure")
	want := libcg.PSIStats{Some: libcg.PSIData{Avg10: 1.5, Avg60: 0.25, Avg300: 0.05, Total: 123456}, Full: libcg.PSIData{Total: 7}}
	if p.CPU == nil || *p.CPU != want {
		t.Errorf("cpu = %+v, want %+v", p.CPU, want)
	}
	if p.Memory == nil || *p.Memory != (libcg.PSIStats{}) {
		t.Errorf("memory = %+v, want zeros", p.Memory)
	}
	if p.IO != nil {
		t.Errorf("io (malformed) = %+v, want none", p.IO)
	}
	if p := readPressure(t.TempDir(), ".pressure"); p.CPU != nil || p.Memory != nil || p.IO != nil {
		t.Errorf("no files: %+v, want none", p)
	}
}
