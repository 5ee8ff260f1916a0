package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffnode/skiff/bench/internal/cpuprof"
	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// profileTop is how many functions the report keeps of a profile, by flat
// and by cumulative CPU each.
const profileTop = 15

// steadyWindow samples agent a over the steady window d into res.Steady
// with sample (sampleSteady over d, or loadedFootprint). With path != "" and an agent socket it also fetches
// a CPU profile of the agent over the window (whole seconds, ending a
// second before the window does), writes it raw to path and its summary
// into res.Profile; a profile that fails is recorded in res.ProfileError,
// never returned: only the /proc sampling fails the window.
func steadyWindow(ctx context.Context, a *agent, res *report.Agent, d time.Duration, path string, sample func() (procfs.Window, error)) error {
	type fetched struct {
		data []byte
		err  error
	}
	var prof chan fetched
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if path != "" && a.sock != "" {
		prof = make(chan fetched, 1)
		go func() {
			data, err := cpuprof.Fetch(pctx, a.sock, max(time.Second, d-time.Second))
			prof <- fetched{data, err}
		}()
	}
	var err error
	if res.Steady, err = sample(); err != nil || prof == nil {
		return err
	}
	var p fetched
	select {
	case p = <-prof:
	case <-time.After(10 * time.Second):
		p.err = fmt.Errorf("cpu profile: no answer %s after the steady window", 10*time.Second)
	}
	if p.err == nil {
		res.Profile, p.err = saveProfile(path, p.data)
	}
	if p.err != nil {
		res.ProfileError = p.err.Error()
	}
	return nil
}

// saveProfile writes the raw profile data to path (creating its directory)
// and returns its summary, File set to path's base name.
func saveProfile(path string, data []byte) (*cpuprof.Summary, error) {
	s, err := cpuprof.Summarize(data, profileTop)
	if err != nil {
		return nil, err
	}
	if err := writeProfileFile(path, data, "cpu profile"); err != nil {
		return nil, err
	}
	s.File = filepath.Base(path)
	return s, nil
}

// writeProfileFile writes the raw profile data to path, creating its
// directory; what names the profile in errors.
func writeProfileFile(path string, data []byte, what string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%s directory: %w", what, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

// probeWindow measures the harness's own CPU over d while the probe
// floor's pods in started all run and probe: the CPU a bare Go CRI client
// spends per ExecSync, the probe floor's per-exec cost. The harness does
// nothing else meanwhile.
func probeWindow(ctx context.Context, started []*criops.Started, d time.Duration) (*report.ProbeWindow, error) {
	calls := func() (n int64) {
		for _, s := range started {
			c, _ := s.ProbeCalls()
			n += c
		}
		return n
	}
	pid := os.Getpid()
	c0 := calls()
	a, err := procfs.Read("/proc", pid, time.Now())
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	b, err := procfs.Read("/proc", pid, time.Now())
	if err != nil {
		return nil, err
	}
	return &report.ProbeWindow{Seconds: b.At.Sub(a.At).Seconds(), Execs: calls() - c0,
		CPUSeconds: float64(b.CPUTicks-a.CPUTicks) / procfs.UserHZ}, nil
}
