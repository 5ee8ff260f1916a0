package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// Prober runs the probes of running containers (B.1-B.19); the probes
// package implements it. Results are keyed by pod UID and container name
// and belong to the container ID last given to AddContainer. All methods
// are safe for concurrent use and do not block on probes.
type Prober interface {
	// AddContainer starts probing a running container; idempotent for the
	// same containerID, and replaces the probes of an older ID.
	AddContainer(pod *v1.Pod, podIP string, c *v1.Container, containerID string, startedAt time.Time)
	// RemoveContainer stops probing a container; idempotent.
	RemoveContainer(podUID types.UID, containerName string)
	// RemovePod stops probing all containers of a pod; idempotent.
	RemovePod(podUID types.UID)
	// Ready reports the readiness result (true without a readiness probe).
	Ready(podUID types.UID, containerName string) bool
	// Started reports whether the startup probe succeeded (true without one).
	Started(podUID types.UID, containerName string) bool
	// LivenessFailed and StartupFailed report a probe that crossed its
	// failure threshold for the current container, with the probe output.
	LivenessFailed(podUID types.UID, containerName string) (bool, string)
	StartupFailed(podUID types.UID, containerName string) (bool, string)
}

// noProber is the Prober of an agent without probes: every running
// container is started and ready.
type noProber struct{}

func (noProber) AddContainer(*v1.Pod, string, *v1.Container, string, time.Time) {}
func (noProber) RemoveContainer(types.UID, string)                              {}
func (noProber) RemovePod(types.UID)                                            {}
func (noProber) Ready(types.UID, string) bool                                   { return true }
func (noProber) Started(types.UID, string) bool                                 { return true }
func (noProber) LivenessFailed(types.UID, string) (bool, string)                { return false, "" }
func (noProber) StartupFailed(types.UID, string) (bool, string)                 { return false, "" }

// syncProbes registers the running containers of the current sandbox with
// the prober and unregisters the others (level-triggered), then returns
// the probe failures the planner acts on.
func (w *podWorker) syncProbes(st *podState) map[string]probeFailure {
	p := w.d.prober
	sb := st.sandbox()
	var latest map[string]*runtime.ContainerStatus
	podIP := ""
	if sb != nil {
		latest = st.latestIn(sb.ID)
		podIP = sb.IP
	}
	failed := map[string]probeFailure{}
	for _, c := range allContainers(w.pod) {
		cs := latest[c.Name]
		if cs == nil || cs.State != runtime.ContainerRunning || w.inPostStart[c.Name] {
			p.RemoveContainer(w.uid, c.Name)
			continue
		}
		p.AddContainer(w.pod, podIP, c, cs.ID, cs.StartedAt)
		if ok, _ := p.StartupFailed(w.uid, c.Name); ok {
			failed[cs.ID] = probeFailure{Probe: "startup", Grace: probeGrace(c.StartupProbe)}
		} else if ok, _ := p.LivenessFailed(w.uid, c.Name); ok {
			failed[cs.ID] = probeFailure{Probe: "liveness", Grace: probeGrace(c.LivenessProbe)}
		}
	}
	return failed
}

// probeGrace is the probe-level terminationGracePeriodSeconds (B.12).
func probeGrace(p *v1.Probe) *int64 {
	if p == nil {
		return nil
	}
	return p.TerminationGracePeriodSeconds
}

// execOutput adapts the runtime's ExecSync to the hook runner: combined
// output, and an error for a non-zero exit like the kubelet's.
func execOutput(rt runtime.Runtime) func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, error) {
	return func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, error) {
		res, err := rt.ExecSync(ctx, id, cmd, timeout)
		if err != nil {
			return nil, err
		}
		out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
		if res.ExitCode != 0 {
			return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), res.ExitCode, res.Stderr)
		}
		return out, nil
	}
}
