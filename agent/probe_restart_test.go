package agent

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// A container killed for a failed liveness or startup probe is restarted
// as its Killing event promises, whatever its exit code: the kubelet starts
// it again in the same sync, so under restartPolicy OnFailure a container
// that exits 0 on SIGTERM is not taken for a completed one (B.9).
func TestProbeKilledContainerRestartsWhateverItsExitCode_B9(t *testing.T) {
	tests := []struct {
		name      string
		policy    v1.RestartPolicy
		exitCode  int32
		marked    bool // killed by a probe with a promised restart
		wantStart bool
		wantPhase v1.PodPhase
	}{
		{"OnFailure exit 0 after probe kill restarts", "OnFailure", 0, true, true, v1.PodRunning},
		{"OnFailure exit 0 by itself completes", "OnFailure", 0, false, false, v1.PodSucceeded},
		{"OnFailure exit 137 after probe kill restarts", "OnFailure", 137, true, true, v1.PodRunning},
		{"Always exit 0 after probe kill restarts", "Always", 0, true, true, v1.PodRunning},
		{"Never exit 0 by itself completes", "Never", 0, false, false, v1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(tt.policy, nil, "a")
			st := state(sandboxReady(0), exited("a", 0, tt.exitCode, t0))
			var marks map[string]bool
			if tt.marked {
				marks = map[string]bool{"a-0": true}
			}
			acts := computePodActions(pod, st, t0.Add(time.Second), newBackoff(), planExtras{RestartAnyway: marks})
			if started := len(acts.StartApp) == 1; started != tt.wantStart || acts.Terminal == tt.wantStart {
				t.Errorf("StartApp %v Terminal %t, want start %t", acts.StartApp, acts.Terminal, tt.wantStart)
			}
			s := computePodStatus(statusInput{Pod: pod, State: st, Now: t0, RestartAnyway: marks})
			if s.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", s.Phase, tt.wantPhase)
			}
		})
	}
}

func TestUnhealthyKillPromisesRestartPerPolicy_B9(t *testing.T) {
	for policy, want := range map[v1.RestartPolicy]bool{"Always": true, "OnFailure": true, "Never": false} {
		pod := testPod(policy, nil, "a")
		x := planExtras{ProbeFailed: map[string]probeFailure{"a-0": {Probe: "liveness"}}}
		acts := computePodActions(pod, state(sandboxReady(0), running("a", 0)), t0, newBackoff(), x)
		if len(acts.Unhealthy) != 1 || acts.Unhealthy[0].Restart != want {
			t.Errorf("%s: Unhealthy %+v, want one kill with Restart %t", policy, acts.Unhealthy, want)
		}
	}
}

// exitZeroOnStop is the fake runtime whose containers exit 0 when stopped,
// like a server that handles SIGTERM.
type exitZeroOnStop struct{ *fake.Runtime }

func (r exitZeroOnStop) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	r.Exit(id, 0)
	return r.Runtime.StopContainer(ctx, id, timeout)
}

func TestLivenessKillUnderOnFailureRestarts_B9(t *testing.T) {
	rt := newFakeRuntime()
	pr := newFakeProber()
	h := startAgentWith(t, exitZeroOnStop{rt}, pr)
	h.src.ch <- []*v1.Pod{testPod("OnFailure", nil, "a")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	pr.set(pr.liveFail, "a", true)
	h.eventually("restarted container", func() bool {
		c, ok := rt.ContainerByName("uid1", "a")
		return ok && c.Attempt == 1 && c.State == runtime.ContainerRunning
	})
	pr.set(pr.liveFail, "a", false)
	h.eventually("restartCount 1 and Running", func() bool {
		p := h.pod("uid1")
		return p != nil && p.Status.Phase == v1.PodRunning && p.Status.ContainerStatuses[0].RestartCount == 1
	})
}

// A pod UID on Config.ProbeChanges (the prober's output) wakes the pod's
// worker: with no resync due, a failed liveness probe is acted on at once.
func TestProbeChangeWakesWorker_B9(t *testing.T) {
	rt := newFakeRuntime()
	pr := newFakeProber()
	changes := make(chan types.UID)
	cfg := testConfig(t, rt)
	cfg.ResyncPeriod = time.Hour
	cfg.Prober, cfg.ProbeChanges = pr, changes
	h := runTestAgent(t, cfg)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	time.Sleep(50 * time.Millisecond) // let the start's follow-up syncs settle
	pr.set(pr.liveFail, "a", true)
	changes <- "uid1"
	h.eventually("container restarted", func() bool {
		c, ok := rt.ContainerByName("uid1", "a")
		return ok && c.Attempt == 1
	})
}
