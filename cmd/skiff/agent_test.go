package main

import (
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The agent runs on one P and GOGC 50 unless the environment says
// otherwise (issue 5: steady CPU and RSS with 110 pods).
func TestTuneGoRuntime(t *testing.T) {
	procs, gc := goruntime.GOMAXPROCS(0), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	t.Cleanup(func() { goruntime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })
	tests := []struct {
		name              string
		envProcs, envGC   string
		wantProcs, wantGC int
	}{
		{"defaults", "", "", agentMaxProcs, agentGCPercent},
		{"environment wins", "3", "80", 3, 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tt.envProcs)
			t.Setenv("GOGC", tt.envGC)
			// What the Go runtime would have read from the environment.
			goruntime.GOMAXPROCS(3)
			debug.SetGCPercent(80)
			tuneGoRuntime()
			if got := goruntime.GOMAXPROCS(0); got != tt.wantProcs {
				t.Errorf("GOMAXPROCS = %d, want %d", got, tt.wantProcs)
			}
			if got := debug.SetGCPercent(80); got != tt.wantGC {
				t.Errorf("GC percent = %d, want %d", got, tt.wantGC)
			}
		})
	}
}

// A negative --max-parallel-starts is refused before anything starts, with
// the flag named (issue 13: 0 is the adaptive default, N > 0 its bound).
func TestAgentRefusesNegativeMaxParallelStarts(t *testing.T) {
	cmd := newAgentCmd()
	cmd.SetArgs([]string{"--max-parallel-starts=-1", "--root-dir", t.TempDir()})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--max-parallel-starts -1") {
		t.Fatalf("err = %v, want one naming --max-parallel-starts -1", err)
	}
}
