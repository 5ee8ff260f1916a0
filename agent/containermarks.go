package agent

import v1 "k8s.io/api/core/v1"

// containerMarks is what a pod worker remembers of its containers'
// instances, by container ID (worker goroutine only).
type containerMarks struct {
	// termMessages caches termination messages (A.40).
	termMessages map[string]string
	// probeKilled: containers killed for a failed liveness or startup
	// probe with a promised restart (B.9); see markProbeKilled. Made by
	// the first mark.
	probeKilled map[string]bool
	// killChecked: probe-killed containers whose restart the back-off
	// held back once (podActions.CheckedKills).
	killChecked map[string]bool
	// oomChecked caches OOM-kill counter checks (D.14).
	oomChecked map[string]bool
	// actuated: the resources the worker created or last resized a
	// container with (in-place resize).
	actuated map[string]v1.ResourceRequirements
}

func newContainerMarks() containerMarks {
	return containerMarks{
		termMessages: map[string]string{},
		killChecked:  map[string]bool{},
		oomChecked:   map[string]bool{},
		actuated:     map[string]v1.ResourceRequirements{},
	}
}

// markProbeKilled records that container id was killed for a failed probe
// with the promise of a restart, so the planner restarts it whatever its
// exit code: the kubelet starts such a container again in the same sync,
// also under restartPolicy OnFailure when it then exits 0 (B.9).
func (m *containerMarks) markProbeKilled(id string) {
	if m.probeKilled == nil {
		m.probeKilled = map[string]bool{}
	}
	m.probeKilled[id] = true
}

// pruneProbeKilled forgets the marks (probeKilled, killChecked,
// actuated) of containers the runtime no longer holds.
func (m *containerMarks) pruneProbeKilled(st *podState) {
	if len(m.probeKilled) == 0 && len(m.killChecked) == 0 && len(m.actuated) == 0 {
		return
	}
	present := make(map[string]bool, len(st.Containers))
	for _, c := range st.Containers {
		present[c.ID] = true
	}
	for _, marks := range []map[string]bool{m.probeKilled, m.killChecked} {
		for id := range marks {
			if !present[id] {
				delete(marks, id)
			}
		}
	}
	for id := range m.actuated {
		if !present[id] {
			delete(m.actuated, id)
		}
	}
}
