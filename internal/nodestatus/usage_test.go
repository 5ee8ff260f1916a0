package nodestatus

import (
	"testing"
	"testing/fstest"
)

// TestReadUsage: busy cpu time from /proc/stat in nanoseconds (idle and
// iowait left out), memory usage and working set from /proc/meminfo.
func TestReadUsage(t *testing.T) {
	root := fstest.MapFS{
		"proc/stat":    {Data: []byte("cpu  100 20 30 5000 40 5 6 7 0 0\ncpu0 50 10 15 2500 20 2 3 3 0 0\nintr 1\n")},
		"proc/meminfo": {Data: []byte("MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    500 kB\nInactive(file):  100 kB\n")},
	}
	u, err := ReadUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(100+20+30+5+6+7) * 1e7; u.CPUUsageNanoSeconds != want {
		t.Errorf("cpu = %d, want %d", u.CPUUsageNanoSeconds, want)
	}
	if u.MemoryUsageBytes != 800*1024 || u.WorkingSetBytes != 700*1024 {
		t.Errorf("memory usage %d working set %d, want %d %d", u.MemoryUsageBytes, u.WorkingSetBytes, 800*1024, 700*1024)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no stat":     {"proc/meminfo": root["proc/meminfo"]},
		"no cpu line": {"proc/stat": {Data: []byte("intr 1\n")}, "proc/meminfo": root["proc/meminfo"]},
		"no MemTotal": {"proc/stat": root["proc/stat"], "proc/meminfo": {Data: []byte("MemFree: 1 kB\n")}},
	} {
		if _, err := ReadUsage(fsys); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
