package nodeshutdown

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiffnode/skiff/internal/atomicfile"
)

// StateFile is the file, under the root directory, that keeps the last
// shutdown's times across the reboot (the kubelet's
// graceful_node_shutdown_state).
const StateFile = "graceful_node_shutdown_state"

// state is StateFile's content, as the kubelet's.
type state struct {
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
}

// Times keeps the last shutdown's start and end (H.21): in a state file,
// so that they survive the reboot, and as the kubelet's
// graceful_shutdown_start_time_seconds and
// graceful_shutdown_end_time_seconds gauges.
type Times struct {
	path       string
	start, end prometheus.Gauge
}

// NewTimes registers the gauges on reg and sets them from the state file
// at path, if there is one (a node that shut down gracefully and came
// back reports when).
func NewTimes(reg prometheus.Registerer, path string) (*Times, error) {
	t := &Times{
		path: path,
		start: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "graceful_shutdown_start_time_seconds",
			Help: "Last graceful shutdown start time since unix epoch in seconds"}),
		end: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "graceful_shutdown_end_time_seconds",
			Help: "Last graceful shutdown end time since unix epoch in seconds"}),
	}
	for _, g := range []prometheus.Gauge{t.start, t.end} {
		if err := reg.Register(g); err != nil {
			return nil, fmt.Errorf("graceful shutdown metrics: %w", err)
		}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("graceful shutdown state: %w", err)
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("graceful shutdown state %s: %w", path, err)
	}
	t.set(s)
	return t, nil
}

// Record notes a shutdown's start (end zero) or its end; it is the
// Manager's Options.Times.
func (t *Times) Record(start, end time.Time) error {
	s := state{StartTime: start, EndTime: end}
	t.set(s)
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("graceful shutdown state: %w", err)
	}
	if err := atomicfile.Write(t.path, b, 0o644); err != nil {
		return fmt.Errorf("graceful shutdown state: %w", err)
	}
	return nil
}

func (t *Times) set(s state) {
	t.start.Set(seconds(s.StartTime))
	t.end.Set(seconds(s.EndTime))
}

func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
