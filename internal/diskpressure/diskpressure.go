// Package diskpressure decides the node's DiskPressure condition as the
// kubelet's eviction manager does from its default hard thresholds:
// nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%,
// imagefs.inodesFree<5%. nodefs is the file system of the root dir and of
// the pod logs, imagefs the one of the runtime's images (skiff's managed
// containerd; an external runtime's is not known). A Monitor checks them
// every 10 s (the kubelet's eviction monitoring period); it reports and
// records an event, it does not evict pods.
package diskpressure

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// The kubelet's default hard thresholds, as fractions.
const (
	NodefsAvailable  = 0.10
	ImagefsAvailable = 0.15
	InodesFree       = 0.05
)

// Interval is how often a Monitor checks (the kubelet's
// evictionMonitoringPeriod).
const Interval = 10 * time.Second

// EventReason is the event a Monitor records when a threshold is crossed:
// the kubelet's reason for a met eviction threshold.
const EventReason = "EvictionThresholdMet"

// Usage is one file system's use, from statfs.
type Usage struct {
	Bytes, BytesAvailable uint64
	Inodes, InodesFree    uint64
}

// Path is a directory whose file system is checked against one signal.
type Path struct {
	// Signal is "nodefs" or "imagefs"; it picks the thresholds.
	Signal string
	Dir    string
}

// Crossed returns what threshold u crosses for signal, e.g.
// "nodefs.available 3.1% < 10%", or "" when none. A file system without
// inode accounting (Inodes 0, e.g. btrfs) is checked on bytes only. Pure.
func Crossed(signal string, u Usage) string {
	minAvail := NodefsAvailable
	if signal == "imagefs" {
		minAvail = ImagefsAvailable
	}
	if u.Bytes > 0 {
		if f := float64(u.BytesAvailable) / float64(u.Bytes); f < minAvail {
			return fmt.Sprintf("%s.available %.1f%% < %.0f%%", signal, 100*f, 100*minAvail)
		}
	}
	if u.Inodes > 0 {
		if f := float64(u.InodesFree) / float64(u.Inodes); f < InodesFree {
			return fmt.Sprintf("%s.inodesFree %.1f%% < %.0f%%", signal, 100*f, 100*InodesFree)
		}
	}
	return ""
}

// Statfs reads dir's file system use.
func Statfs(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize) //nolint:gosec // a block size is positive
	return Usage{Bytes: st.Blocks * bs, BytesAvailable: st.Bavail * bs, Inodes: st.Files, InodesFree: st.Ffree}, nil
}

// Config configures a Monitor.
type Config struct {
	Paths []Path
	// Statfs reads a directory's use; nil is Statfs.
	Statfs func(dir string) (Usage, error)
	// Event records a node event (type, reason, message); nil records none.
	Event  func(typ, reason, msg string)
	Clock  clock.WithTicker // nil: the real clock
	Logger *slog.Logger
}

// Monitor checks the paths every Interval. Pressure is safe for concurrent
// use.
type Monitor struct {
	cfg     Config
	mu      sync.Mutex
	pressed string // the first crossed threshold with its dir; "" none
}

// New returns a Monitor; Run starts its checks.
func New(cfg Config) *Monitor {
	if cfg.Statfs == nil {
		cfg.Statfs = Statfs
	}
	if cfg.Event == nil {
		cfg.Event = func(string, string, string) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Monitor{cfg: cfg}
}

// Pressure returns why the node has DiskPressure, e.g. "nodefs.available
// 3.1% < 10% (/var/lib/skiff)", or "" when it has none.
func (m *Monitor) Pressure() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pressed
}

// Run checks at once, then every Interval until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := m.cfg.Clock.NewTicker(Interval)
	defer t.Stop()
	for {
		m.Check()
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Check reads every path once and updates Pressure; entering pressure
// records a Warning event naming the threshold and the directory, leaving
// it is logged. A path that cannot be read is logged and skipped.
func (m *Monitor) Check() {
	var why string
	for _, p := range m.cfg.Paths {
		u, err := m.cfg.Statfs(p.Dir)
		if err != nil {
			m.log().Warn("disk pressure: cannot read a file system", "signal", p.Signal, "err", err)
			continue
		}
		if c := Crossed(p.Signal, u); c != "" {
			why = fmt.Sprintf("%s (%s)", c, p.Dir)
			break
		}
	}
	m.mu.Lock()
	was := m.pressed
	m.pressed = why
	m.mu.Unlock()
	switch {
	case why != "" && was == "":
		m.log().Warn("disk pressure", "threshold", why)
		m.cfg.Event("Warning", EventReason, "Node has DiskPressure: "+why)
	case why == "" && was != "":
		m.log().Info("disk pressure over", "was", was)
	}
}

func (m *Monitor) log() *slog.Logger {
	if m.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.cfg.Logger
}
