package main

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// sigtermLine is what the test server logs on SIGTERM; startedLine what it
// logs once its SIGTERM handler is in place. A SIGTERM sent before that
// kills it silently (the floor stops its pod right after StartContainer).
const (
	sigtermLine = "received SIGTERM"
	startedLine = "testserver: started"
)

// waitStarted waits until the test server's handler is in place.
func waitStarted(ctx context.Context, logPath string) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := criops.WaitLogLine(wctx, logPath, startedLine, 10*time.Millisecond); err != nil {
		return fmt.Errorf("test server start: %w", err)
	}
	return nil
}

// startAgentPod writes one manifest and waits for its app container.
func (b *bench) startAgentPod(ctx context.Context, a *agent, name string, kind podKind, rev int) (*runtimeapi.Container, error) {
	data, err := manifest(name, kind, rev)
	if err != nil {
		return nil, err
	}
	if _, err := writeManifests(a.dir, map[string][]byte{name: data}); err != nil {
		return nil, err
	}
	pods := []string{podName(name)}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(1))
	defer cancel()
	if _, err := b.c.WaitRunning(wctx, pods, criops.InPods(agentNamespace, "app", pods), poll); err != nil {
		return nil, fmt.Errorf("%s pod %s: %w", a.name, name, err)
	}
	return b.c.ContainerID(ctx, agentNamespace, pods[0], "app")
}

// agentSigterm: manifest deleted -> "received SIGTERM" in the log.
func (b *bench) agentSigterm(ctx context.Context, a *agent, name string) (float64, error) {
	ctr, err := b.startAgentPod(ctx, a, name, kindSigterm, 1)
	if err != nil {
		return 0, err
	}
	logPath, err := b.c.LogPath(ctx, ctr.Id)
	if err != nil {
		return 0, err
	}
	if err := waitStarted(ctx, logPath); err != nil {
		return 0, fmt.Errorf("%s pod %s: %w", a.name, name, err)
	}
	t0, err := removeManifests(a.dir, []string{name})
	if err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ts, err := criops.WaitLogLine(wctx, logPath, sigtermLine, 10*time.Millisecond)
	if err != nil {
		return 0, fmt.Errorf("%s pod %s: %w", a.name, name, err)
	}
	if _, err := b.c.WaitStopped(wctx, agentNamespace, []string{podName(name)}, poll); err != nil {
		return 0, err
	}
	return ts.Sub(t0).Seconds(), nil
}

func (b *bench) floorSigterm(ctx context.Context, name string) (float64, error) {
	s, err := b.floor.StartPod(ctx, floorPod(name, kindSigterm, 1))
	if err != nil {
		return 0, err
	}
	logPath, err := b.c.LogPath(ctx, s.AppID)
	if err != nil {
		return 0, err
	}
	if err := waitStarted(ctx, logPath); err != nil {
		return 0, fmt.Errorf("floor pod %s: %w", name, err)
	}
	t0 := time.Now()
	if err := b.floor.StopPod(ctx, s, graceSeconds); err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ts, err := criops.WaitLogLine(wctx, logPath, sigtermLine, 10*time.Millisecond)
	if err != nil {
		return 0, fmt.Errorf("floor pod %s: %w", name, err)
	}
	return ts.Sub(t0).Seconds(), nil
}

// agentLiveness: liveness file removed (CRI exec) -> restarted app running.
func (b *bench) agentLiveness(ctx context.Context, a *agent, name string) (float64, error) {
	old, err := b.startAgentPod(ctx, a, name, kindLiveness, 1)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if _, err := b.c.RT.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: old.Id, Cmd: []string{"rm", "-f", "/tmp/healthy"}, Timeout: 10}); err != nil {
		return 0, fmt.Errorf("%s pod %s: break liveness: %w", a.name, name, err)
	}
	pods := []string{podName(name)}
	inPod := criops.InPods(agentNamespace, "app", pods)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	started, err := b.c.WaitRunning(wctx, pods, func(c *runtimeapi.Container) bool { return inPod(c) && c.Id != old.Id }, poll)
	if err != nil {
		return 0, fmt.Errorf("%s pod %s: restart after liveness failure: %w", a.name, name, err)
	}
	if err := b.agentRemove(ctx, a, []string{name}); err != nil {
		return 0, err
	}
	return started[pods[0]].Sub(t0).Seconds(), nil
}

func (b *bench) floorLiveness(ctx context.Context, name string) (float64, error) {
	s, err := b.floor.StartPod(ctx, floorPod(name, kindLiveness, 1))
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	at, err := b.floor.RestartApp(ctx, s, graceSeconds)
	if err != nil {
		return 0, err
	}
	return at.Sub(t0).Seconds(), b.floor.StopPod(ctx, s, graceSeconds)
}

// agentEdit: manifest edited (new static pod UID) -> new pod's app running.
func (b *bench) agentEdit(ctx context.Context, a *agent, name string) (float64, error) {
	old, err := b.startAgentPod(ctx, a, name, kindStartup, 1)
	if err != nil {
		return 0, err
	}
	data, err := manifest(name, kindStartup, 2)
	if err != nil {
		return 0, err
	}
	t0, err := writeManifests(a.dir, map[string][]byte{name: data})
	if err != nil {
		return 0, err
	}
	pods := []string{podName(name)}
	inPod := criops.InPods(agentNamespace, "app", pods)
	oldUID := old.Labels[criops.LabelPodUID]
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	started, err := b.c.WaitRunning(wctx, pods, func(c *runtimeapi.Container) bool {
		return inPod(c) && c.Labels[criops.LabelPodUID] != oldUID
	}, poll)
	if err != nil {
		return 0, fmt.Errorf("%s pod %s: new pod after edit: %w", a.name, name, err)
	}
	if err := b.agentRemove(ctx, a, []string{name}); err != nil {
		return 0, err
	}
	return started[pods[0]].Sub(t0).Seconds(), nil
}

func (b *bench) floorEdit(ctx context.Context, name string) (float64, error) {
	s, err := b.floor.StartPod(ctx, floorPod(name, kindStartup, 1))
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := b.floor.StopPod(ctx, s, graceSeconds); err != nil {
		return 0, err
	}
	s2, err := b.floor.StartPod(ctx, floorPod(name, kindStartup, 2))
	if err != nil {
		return 0, err
	}
	return s2.StartedAt.Sub(t0).Seconds(), b.floor.StopPod(ctx, s2, graceSeconds)
}

// reactionFns are the reactions of one subject (skiff, kubelet or the
// floor); each gets a fresh pod name.
type reactionFns struct {
	sigterm, liveness, edit func(ctx context.Context, name string) (float64, error)
}

// runReactions runs every reaction of f runs times, appending seconds.
func (b *bench) runReactions(ctx context.Context, who string, runs int, f reactionFns, sig, live, edit *[]float64) error {
	for i := range runs {
		for _, r := range []struct {
			what string
			fn   func(context.Context, string) (float64, error)
			out  *[]float64
		}{{"sigterm", f.sigterm, sig}, {"liveness", f.liveness, live}, {"edit", f.edit, edit}} {
			v, err := r.fn(ctx, fmt.Sprintf("%s-%s-%d", who, r.what, i))
			if err != nil {
				return err
			}
			*r.out = append(*r.out, v)
			b.log.Info("reaction", "who", who, "what", r.what, "run", i, "s", v)
		}
	}
	return nil
}

func (b *bench) reaction(ctx context.Context) (*report.Reaction, error) {
	var sig, live, edit [3][]float64 // skiff, floor, kubelet
	agentFns := func(a *agent) reactionFns {
		return reactionFns{
			sigterm:  func(ctx context.Context, n string) (float64, error) { return b.agentSigterm(ctx, a, n) },
			liveness: func(ctx context.Context, n string) (float64, error) { return b.agentLiveness(ctx, a, n) },
			edit:     func(ctx context.Context, n string) (float64, error) { return b.agentEdit(ctx, a, n) },
		}
	}
	floorFns := reactionFns{sigterm: b.floorSigterm, liveness: b.floorLiveness, edit: b.floorEdit}
	// Interleaved: one round of skiff, one of the floor, runs times.
	for i := range b.cfg.reactionRuns {
		if err := b.runReactions(ctx, fmt.Sprintf("s%d", i), 1, agentFns(b.skiff), &sig[0], &live[0], &edit[0]); err != nil {
			return nil, err
		}
		if err := b.runReactions(ctx, fmt.Sprintf("f%d", i), 1, floorFns, &sig[1], &live[1], &edit[1]); err != nil {
			return nil, err
		}
	}
	if err := b.cleanFloor(ctx); err != nil {
		return nil, err
	}
	err := b.withKubelet(ctx, func(k *agent) error {
		return b.runReactions(ctx, "k", b.cfg.reactionRuns, agentFns(k), &sig[2], &live[2], &edit[2])
	})
	if err != nil {
		return nil, err
	}
	cmp := func(x [3][]float64) report.Compare {
		return report.Compare{Skiff: report.NewSeries(x[0]), Floor: report.NewSeries(x[1]), Kubelet: report.NewSeries(x[2])}
	}
	return &report.Reaction{LivenessPeriodS: livenessPeriod, Sigterm: cmp(sig), Liveness: cmp(live), Edit: cmp(edit)}, nil
}
