package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestFaultsAgentKilledDuringChurn (the kubelet's restart_test.go): pods
// are created and deleted without pause while the agent is killed (-9) at
// random points and started again. At the end every desired pod runs once,
// every deleted pod is gone, and nothing of them is left.
func TestFaultsAgentKilledDuringChurn(t *testing.T) {
	e, sc := faultsEnv(t)
	e.StartAgent(t, AgentOptions{})
	rng := rand.New(rand.NewPCG(34, 2))
	kills := map[int]bool{}
	for len(kills) < sc.agentKills {
		kills[1+rng.IntN(sc.agentChurnOps-1)] = true
	}
	const maxLive = 20
	var live []string
	created, deleted := 0, 0
	var downtimes []time.Duration
	for op := range sc.agentChurnOps {
		if len(live) == 0 || (len(live) < maxLive && rng.IntN(2) == 0) {
			name := fmt.Sprintf("ac%d", created)
			e.WriteManifest(t, name+".yaml", faultPod(name))
			live = append(live, name)
			created++
		} else {
			i := rng.IntN(len(live))
			e.RemoveManifest(t, live[i]+".yaml")
			live = slices.Delete(live, i, i+1)
			deleted++
		}
		if kills[op] {
			// A random moment of the agent's work on the ops so far.
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
			t0 := time.Now()
			e.KillAgent(t)
			e.StartAgent(t, AgentOptions{})
			downtimes = append(downtimes, time.Since(t0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	s, took := e.waitConverged(t, len(live), convergeTimeout)
	want := map[string]bool{}
	for _, n := range live {
		want[PodName(n)] = true
	}
	for _, p := range s.pods {
		if !want[p.Name] {
			t.Errorf("pod %s runs but its manifest was deleted", p.Name)
		}
	}
	worst := slices.Max(downtimes)
	e.report(t, faultRecord{scenario: "agent kill -9 during create/delete churn", scale: sc.name, pods: len(live), restarts: s.restarts,
		recovery: took.Round(100*time.Millisecond).String() + " after the last op",
		notes: fmt.Sprintf("%d ops (%d created, %d deleted), %d kills; agent healthy again within %s of each kill",
			sc.agentChurnOps, created, deleted, sc.agentKills, worst.Round(100*time.Millisecond))})
}

// TestFaultsTerminatedPodsSurviveRestart (the kubelet's restart_test.go
// "should correctly account for terminated pods after restart"): pods that
// ran to completion keep their phase, exit codes and containers across an
// agent kill -9; none is run again.
func TestFaultsTerminatedPodsSurviveRestart(t *testing.T) {
	e, sc := faultsEnv(t)
	e.StartAgent(t, AgentOptions{})
	pods := []struct {
		name, policy, script string
		phase                v1.PodPhase
		exit                 int32
	}{
		{"never-ok", "Never", "exit 0", v1.PodSucceeded, 0},
		{"never-fail", "Never", "exit 3", v1.PodFailed, 3},
		{"onfailure-ok", "OnFailure", "exit 0", v1.PodSucceeded, 0},
	}
	before := map[string]string{}
	for _, p := range pods {
		e.WriteManifest(t, p.name+".yaml", podSpec(p.name, []string{"restartPolicy: " + p.policy, "terminationGracePeriodSeconds: 2"}, nil,
			[]string{container("app", busyboxImage, []string{"sh", "-c", p.script}, nil)}))
	}
	for _, p := range pods {
		got := e.WaitForPod(t, PodName(p.name), phaseIs(p.phase), podStartTimeout)
		before[p.name] = containerIDs(e.Containers(t, uidLabels(string(got.UID))))
	}
	e.KillAgent(t)
	e.StartAgent(t, AgentOptions{})
	e.barrier(t, "after-restart")
	for _, p := range pods {
		got := e.WaitForPod(t, PodName(p.name), phaseIs(p.phase), podStartTimeout)
		st := statusOf(t, got, "app")
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != p.exit || st.RestartCount != 0 {
			t.Errorf("pod %s after the restart: state %+v, restarts %d; want terminated with %d, no restart", p.name, st.State, st.RestartCount, p.exit)
		}
		if ids := containerIDs(e.Containers(t, uidLabels(string(got.UID)))); ids != before[p.name] {
			t.Errorf("pod %s containers %s, before the restart %s: run again", p.name, ids, before[p.name])
		}
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.name
	}
	e.report(t, faultRecord{scenario: "terminated pods across an agent kill -9", scale: sc.name, pods: len(pods), recovery: "-",
		notes: "phase, exit code and container kept: " + strings.Join(names, ", ")})
}
