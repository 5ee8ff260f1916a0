package nodeshutdown

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTimesSurviveReboot_H21(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	tm, err := NewTimes(prometheus.NewRegistry(), path)
	if err != nil {
		t.Fatal(err)
	}
	start, end := time.Unix(1000, 0), time.Unix(1030, 500e6)
	if err := tm.Record(start, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(tm.end); got != 0 {
		t.Errorf("end %v while the shutdown runs, want 0", got)
	}
	if err := tm.Record(start, end); err != nil {
		t.Fatal(err)
	}
	// The node boots: a new agent reads the state back.
	reg := prometheus.NewRegistry()
	again, err := NewTimes(reg, path)
	if err != nil {
		t.Fatal(err)
	}
	if s, e := testutil.ToFloat64(again.start), testutil.ToFloat64(again.end); s != 1000 || e != 1030.5 {
		t.Errorf("after the boot start %v end %v, want 1000 1030.5", s, e)
	}
	n, err := testutil.GatherAndCount(reg, "kubelet_graceful_shutdown_start_time_seconds", "kubelet_graceful_shutdown_end_time_seconds")
	if err != nil || n != 2 {
		t.Errorf("gathered %d metrics (%v), want 2", n, err)
	}
}
