package agent

import (
	"maps"
	"testing"

	"github.com/skiffnode/skiff/runtime"
)

// TestContainerMarksPrune: the probe-kill marks of containers the runtime
// no longer holds are forgotten, those of present ones kept.
func TestContainerMarksPrune(t *testing.T) {
	m := newContainerMarks()
	m.markProbeKilled("kept")
	m.markProbeKilled("gone")
	m.killChecked["kept"], m.killChecked["gone2"] = true, true
	m.pruneProbeKilled(&podState{Containers: []*runtime.ContainerStatus{{Container: runtime.Container{ID: "kept"}}, {Container: runtime.Container{ID: "other"}}}})
	want := map[string]bool{"kept": true}
	if !maps.Equal(m.probeKilled, want) || !maps.Equal(m.killChecked, want) {
		t.Errorf("probeKilled %v, killChecked %v; want %v each", m.probeKilled, m.killChecked, want)
	}
}
