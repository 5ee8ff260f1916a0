package main

import (
	"context"
	"fmt"
	"time"

	"github.com/skiffnode/skiff/bench/internal/report"
)

// burstSettle is how long the burst pods are left after the last one's
// first container started before their containers are read: long enough
// for the crash loop's and the OOM pod's first restarts (the kubelet's
// back-off starts at 10 s).
const burstSettle = 20 * time.Second

// burst is the burst scenario: the 12 burstPods written at once, for
// skiff and then, with a kubelet, for the kubelet (it kills pods it does
// not know, so never both at once); each agent's pods are removed, and
// waited for, before the next.
func (b *bench) burst(ctx context.Context) (*report.Burst, error) {
	pods := burstPods()
	res := &report.Burst{SettleS: burstSettle.Seconds()}
	for _, p := range pods {
		res.Pods = append(res.Pods, report.BurstPod{Name: p.name, Covers: p.covers})
	}
	var err error
	if res.Skiff, err = b.agentBurst(ctx, b.skiff, pods); err != nil {
		return nil, err
	}
	err = b.withKubelet(ctx, func(k *agent) error {
		res.Kubelet, err = b.agentBurst(ctx, k, pods)
		return err
	})
	return res, err
}

// agentBurst writes every burst pod's manifest into a's directory at
// once, waits until each pod's first container started, lets them settle,
// reads what their containers did and removes them again.
func (b *bench) agentBurst(ctx context.Context, a *agent, pods []burstPod) (*report.BurstRun, error) {
	manifests := make(map[string][]byte, len(pods))
	names, podNames := make([]string, len(pods)), make([]string, len(pods))
	for i, p := range pods {
		names[i] = a.prefix + "-b-" + p.name
		podNames[i] = podName(names[i])
		data, err := burstManifest(names[i], p)
		if err != nil {
			return nil, err
		}
		manifests[names[i]] = data
	}
	t0, err := writeManifests(a.dir, manifests)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(len(pods)))
	defer cancel()
	started, err := b.c.WaitFirstStarted(wctx, agentNamespace, podNames, poll)
	if err != nil {
		return nil, fmt.Errorf("%s burst: %w", a.name, err)
	}
	run := &report.BurstRun{FirstStartS: map[string]float64{}, Observed: map[string]string{}}
	for i, p := range pods {
		run.FirstStartS[p.name] = started[podNames[i]].Sub(t0).Seconds()
	}
	_, last := spanOf(started)
	b.log.Info("burst started", "agent", a.name, "pods", len(pods), "last_s", last.Sub(t0).Seconds())
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(last.Add(burstSettle))):
	}
	for i, p := range pods {
		sts, err := b.c.PodContainers(ctx, agentNamespace, podNames[i])
		if err != nil {
			return nil, err
		}
		run.Observed[p.name] = observed(sts)
		b.log.Info("burst pod", "agent", a.name, "pod", p.name, "first_s", run.FirstStartS[p.name], "observed", run.Observed[p.name])
	}
	if err := b.agentRemove(ctx, a, names); err != nil {
		return nil, err
	}
	return run, nil
}
