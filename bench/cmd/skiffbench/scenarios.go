package main

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// poll is how often CRI state is polled; figures come from the runtime's
// own timestamps where there are any, so it bounds only the waiting.
const poll = 50 * time.Millisecond

// Many pods are polled less often: every listing costs containerd CPU in
// proportion to the pods (250 containers every 50 ms took a good part of a
// core), which the floor, which polls nothing, does not pay. Running times
// come from CRI StartedAt, so densityPoll only delays the end of the wait;
// stopped times are when a poll saw them, so removePoll is the resolution
// of "remove all".
const (
	densityPoll = time.Second
	removePoll  = 250 * time.Millisecond
)

// bench holds what every scenario needs.
type bench struct {
	cfg     config
	c       *criops.Client
	floor   *criops.Floor
	skiff   *agent
	kubelet func(extra ...string) (*agent, error) // nil: no kubelet column
	log     *slog.Logger
	// startSkiff starts another skiff process on the same root and
	// runtime as skiff, with extra arguments (the API scenario's
	// --kubeconfig); skiff must be stopped first.
	startSkiff func(extra ...string) (*agent, error)
	// controlPlane is the kube-controlplane binary of the API scenario
	// ("": not run) and dir the runtime's directory.
	controlPlane, dir string
	// apiServer is skiff-apiserver of the shim scenario ("": not run);
	// skiffRoot is skiff's --root-dir on this runtime.
	apiServer, skiffRoot string
	// proxyTable: skiff ran with --control-plane and its service proxy,
	// whose nftables table (proxyTableName) teardown deletes.
	proxyTable bool
	// profilePath is where skiff's CPU profile of the density scenario's
	// steady window is written ("": none taken).
	profilePath string
	// shimHeapPath is where skiff-apiserver's heap profile at the end of
	// the shim scenario's steady window is written ("": taken and
	// summarised, not saved).
	shimHeapPath string
	// runtimeProcs finds the runtime's containerd and shims for the node
	// footprint (nil: not measured) and the writes scenario.
	runtimeProcs runtimeProcs
	// dev is the block device of dir, once looked for (see device).
	dev *deviceResult
	// runtimeDirs are the runtime's containerd's root and state
	// directories and its log (the writes scenario lists what was
	// written there).
	runtimeDirs []string
}

// kubeletSettle is how long the kubelet runs before a scenario writes its
// pods (see withKubelet).
const kubeletSettle = 10 * time.Second

// runTimeout bounds waiting for n pods to start or stop (a failure guard).
func runTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*2*time.Second }

// withKubelet starts the kubelet, runs fn and stops the kubelet again: the
// kubelet kills every pod it does not know, so it runs only while neither
// skiff nor the floor has pods.
func (b *bench) withKubelet(ctx context.Context, fn func(*agent) error) error {
	return b.withKubeletArgs(ctx, nil, fn)
}

// withKubeletArgs is withKubelet with extra kubelet arguments.
func (b *bench) withKubeletArgs(ctx context.Context, extra []string, fn func(*agent) error) error {
	if b.kubelet == nil {
		return nil
	}
	k, err := b.kubelet(extra...)
	if err != nil {
		return err
	}
	// The kubelet answers healthz before its housekeeping after start
	// (image and container GC, node status, the first relists) is done;
	// pods written into that found it busy. Let it settle, as skiff (which
	// runs from the start of the runtime's part) has.
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(kubeletSettle):
		err = fn(k)
	}
	if serr := stopKubelet(ctx, k, b.c); serr != nil && err == nil {
		err = serr
	}
	return err
}

// cleanFloor removes the floor's sandboxes.
func (b *bench) cleanFloor(ctx context.Context) error {
	_, err := b.c.RemoveSandboxes(ctx, func(s *runtimeapi.PodSandbox) bool { return s.Metadata.GetNamespace() == floorNamespace })
	return err
}

// --- scenario 1: startup latency ---

// agentStartOne writes the manifest of one pod of kind, waits for its app
// container and returns manifest -> StartedAt and that path's phases (see
// podPhases); the pod is then removed again.
func (b *bench) agentStartOne(ctx context.Context, a *agent, name string, kind podKind) (float64, []float64, error) {
	data, err := manifest(name, kind, 1)
	if err != nil {
		return 0, nil, err
	}
	t0, err := writeManifests(a.dir, map[string][]byte{name: data})
	if err != nil {
		return 0, nil, err
	}
	pods := []string{podName(name)}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(1))
	defer cancel()
	started, err := b.c.WaitRunning(wctx, pods, criops.InPods(agentNamespace, "app", pods), poll)
	if err != nil {
		return 0, nil, fmt.Errorf("%s startup pod %s: %w", a.name, name, err)
	}
	var phases []float64
	if app, err := b.c.ContainerID(ctx, agentNamespace, pods[0], "app"); err == nil {
		phases = b.podPhases(ctx, app.PodSandboxId, t0)
	}
	if err := b.agentRemove(ctx, a, []string{name}); err != nil {
		return 0, nil, err
	}
	return started[pods[0]].Sub(t0).Seconds(), phases, nil
}

// podPhases splits a startup pod's path from t0 at its runtime timestamps
// (criops.PhaseNames); nil, logged, when they cannot be read: the phases
// explain the figure, they are not it.
func (b *bench) podPhases(ctx context.Context, sandboxID string, t0 time.Time) []float64 {
	t, err := b.c.PodTimes(ctx, sandboxID, "init", "app")
	if err != nil {
		b.log.Warn("startup phases", "sandbox", sandboxID, "err", err)
		return nil
	}
	return t.Phases(t0)
}

// agentRemove deletes manifests and waits until the pods are stopped;
// returns the seconds that took.
func (b *bench) agentRemoveTimed(ctx context.Context, a *agent, names []string) (float64, error) {
	t0, err := removeManifests(a.dir, names)
	if err != nil {
		return 0, err
	}
	pods := make([]string, len(names))
	for i, n := range names {
		pods[i] = podName(n)
	}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(len(names)))
	defer cancel()
	p := poll
	if len(pods) > 1 {
		p = removePoll
	}
	done, err := b.c.WaitStopped(wctx, agentNamespace, pods, p)
	if err != nil {
		return 0, fmt.Errorf("%s: removing %d pods: %w", a.name, len(names), err)
	}
	if a.drains {
		// Untimed: the agent's removal of what it stopped (containers,
		// sandboxes, a second CNI DEL in containerd's RemovePodSandbox)
		// must not overlap the next measurement, which is often the floor's.
		if err := b.c.WaitGone(wctx, agentNamespace, pods, p); err != nil {
			return 0, fmt.Errorf("%s: %w", a.name, err)
		}
	}
	return done.Sub(t0).Seconds(), nil
}

func (b *bench) agentRemove(ctx context.Context, a *agent, names []string) error {
	_, err := b.agentRemoveTimed(ctx, a, names)
	return err
}

// floorStartOne starts and stops one floor pod of kind and returns first
// CRI call (or volume write) -> StartedAt and that path's phases.
func (b *bench) floorStartOne(ctx context.Context, name string, kind podKind) (float64, []float64, error) {
	t0 := time.Now()
	s, err := b.floor.StartPod(ctx, floorPod(name, kind, 1))
	if err != nil {
		return 0, nil, err
	}
	phases := b.podPhases(ctx, s.SandboxID, t0)
	if err := b.floor.StopPod(ctx, s, graceSeconds); err != nil {
		return 0, nil, err
	}
	return s.StartedAt.Sub(t0).Seconds(), phases, nil
}

// startupSeries starts n pods of kind one after another, skiff then the
// floor alternately, and returns both series of seconds, with each pod's
// phases in ph (Skiff and Floor; a pod whose phases could not be read is
// left out); the floor's sandboxes are removed afterwards.
func (b *bench) startupSeries(ctx context.Context, n int, kind podKind, prefix string, ph *report.Phases) (sk, fl []float64, err error) {
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		s, sph, err := b.agentStartOne(ctx, b.skiff, "s-"+name, kind)
		if err != nil {
			return nil, nil, err
		}
		f, fph, err := b.floorStartOne(ctx, "f-"+name, kind)
		if err != nil {
			return nil, nil, err
		}
		sk, fl = append(sk, s), append(fl, f)
		ph.Add(report.PhasesSkiff, sph)
		ph.Add(report.PhasesFloor, fph)
		b.log.Info("startup", "series", prefix, "pod", i, "skiff_s", s, "floor_s", f)
	}
	return sk, fl, b.cleanFloor(ctx)
}

// startup measures the plain startup pods (skiff, the floor, then the
// kubelet), then as many pods with volumes (skiff and the floor: the
// kubelet forbids static pods to reference ConfigMaps).
func (b *bench) startup(ctx context.Context) (*report.Startup, error) {
	n := b.cfg.startupPods
	var kb []float64
	ph := &report.Phases{Names: criops.PhaseNames()}
	sk, fl, err := b.startupSeries(ctx, n, kindStartup, "st", ph)
	if err != nil {
		return nil, err
	}
	err = b.withKubelet(ctx, func(k *agent) error {
		for i := range n {
			s, kph, err := b.agentStartOne(ctx, k, fmt.Sprintf("k-st-%d", i), kindStartup)
			if err != nil {
				return err
			}
			kb = append(kb, s)
			ph.Add(report.PhasesKubelet, kph)
			b.log.Info("startup", "pod", i, "kubelet_s", s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vsk, vfl, err := b.startupSeries(ctx, n, kindStartupVolumes, "stv", nil)
	if err != nil {
		return nil, fmt.Errorf("startup with volumes: %w", err)
	}
	return &report.Startup{Pods: n, Phases: ph, Compare: report.Compare{
		Skiff: report.NewSeries(sk), Floor: report.NewSeries(fl), Kubelet: report.NewSeries(kb),
	}, Volumes: &report.Compare{Skiff: report.NewSeries(vsk), Floor: report.NewSeries(vfl)}}, nil
}

// --- scenario 2 and 4: density ---

// agentDensity writes n density manifests at once, waits for all to run,
// samples the agent over the steady window (with profile != "" also taking
// a CPU profile into that file, see steadyWindow; with fp != nil sampling
// the runtime's containerd, shims and pause processes with it into *into
// when both are given, see loadedFootprint) and removes them all.
func (b *bench) agentDensity(ctx context.Context, a *agent, n int, steady time.Duration, profile string, fp *report.Footprint, into **report.NodeFootprint) (*report.Agent, error) {
	manifests := make(map[string][]byte, n)
	names := make([]string, 0, n)
	pods := make([]string, 0, n)
	for i := range n {
		name := fmt.Sprintf("%s-d%d-%d", a.prefix, n, i)
		data, err := densityManifest(name, densityCPUMilli(n, goruntime.NumCPU()))
		if err != nil {
			return nil, err
		}
		manifests[name] = data
		names, pods = append(names, name), append(pods, podName(name))
	}
	t0, err := writeManifests(a.dir, manifests)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	started, err := b.c.WaitRunning(wctx, pods, criops.InPods(agentNamespace, "app", pods), densityPoll)
	if err != nil {
		return nil, fmt.Errorf("%s density %d: %w", a.name, n, err)
	}
	first, last := spanOf(started)
	res := &report.Agent{Pods: n, FirstRunningS: first.Sub(t0).Seconds(), AllRunningS: last.Sub(t0).Seconds()}
	b.log.Info("density running", "agent", a.name, "pods", n, "first_s", res.FirstRunningS, "all_s", res.AllRunningS)
	sample := func() (procfs.Window, error) { return sampleSteady(ctx, a.pid(), steady) }
	if fp != nil && into != nil {
		sample = func() (procfs.Window, error) { return b.loadedFootprint(ctx, a, n, steady, fp, into) }
	}
	if err := steadyWindow(ctx, a, res, steady, profile, sample); err != nil {
		return nil, fmt.Errorf("%s density %d steady window: %w", a.name, n, err)
	}
	if res.ProfileError != "" {
		b.log.Warn("cpu profile unavailable", "agent", a.name, "pods", n, "err", res.ProfileError)
	}
	if res.RemoveAllS, err = b.agentRemoveTimed(ctx, a, names); err != nil {
		return nil, err
	}
	b.log.Info("density done", "agent", a.name, "pods", n, "cpu_pct", res.Steady.CPUPercent, "rss_max_mb", res.Steady.RSSMaxMB, "remove_s", res.RemoveAllS)
	return res, nil
}

func spanOf(started map[string]time.Time) (first, last time.Time) {
	for _, t := range started {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last
}

// sampleSteady reads /proc/<pid> once a second for d.
func sampleSteady(ctx context.Context, pid int, d time.Duration) (procfs.Window, error) {
	samples, err := sampleEvery(ctx, d, func(now time.Time) (procfs.Sample, error) { return procfs.Read("/proc", pid, now) })
	if err != nil {
		return procfs.Window{}, err
	}
	return procfs.Summarize(samples)
}

// floorDensity starts n density pods with the given parallelism and stops
// them again with the same parallelism; with probes each pod also makes
// its readiness probe from its app's start until its stop.
func (b *bench) floorDensity(ctx context.Context, n, parallelism int, probes bool) (report.Floor, error) {
	pods := make([]criops.Pod, n)
	for i := range pods {
		name := fmt.Sprintf("f-d%d-p%d-%d", n, parallelism, i)
		if probes {
			name = fmt.Sprintf("f-d%d-p%d-probe-%d", n, parallelism, i)
		}
		pods[i] = floorPod(name, kindDensity, 1)
		pods[i].App.CPUShares = max(2, densityCPUMilli(n, goruntime.NumCPU())*1024/1000)
		if probes {
			pods[i].App.Probe = densityFloorProbe()
		}
	}
	start, err := b.floor.StartAll(ctx, pods, parallelism)
	if err != nil {
		_ = b.cleanFloor(ctx)
		return report.Floor{}, err
	}
	var window *report.ProbeWindow
	if probes && b.cfg.probeWindow > 0 {
		if window, err = probeWindow(ctx, start.Started, b.cfg.probeWindow); err != nil {
			b.log.Warn("probe floor window", "err", err) // the figure is left out
		}
	}
	stop, err := b.floor.StopAll(ctx, start.Started, parallelism, graceSeconds)
	if err != nil {
		return report.Floor{}, err
	}
	res := report.Floor{Pods: n, Parallelism: parallelism, Probes: probes,
		FirstRunningS: start.First.Sub(start.Began).Seconds(), AllRunningS: start.Last.Sub(start.Began).Seconds(),
		RemoveAllS: stop.Last.Sub(stop.Began).Seconds(), ProbeWindow: window}
	for _, s := range start.Started {
		c, f := s.ProbeCalls()
		res.ProbeExecs, res.ProbeFails = res.ProbeExecs+c, res.ProbeFails+f
	}
	b.log.Info("floor density", "pods", n, "parallelism", parallelism, "probes", res.ProbeExecs, "first_s", res.FirstRunningS, "all_s", res.AllRunningS, "remove_s", res.RemoveAllS)
	return res, b.cleanFloor(ctx)
}

// density runs scenario 2: skiff's n pods (its steady window also the
// node footprint's loaded window, into fp; nil: not), the floors and the
// kubelet.
func (b *bench) density(ctx context.Context, fp *report.Footprint) (*report.Density, error) {
	n := b.cfg.densityPods
	d := &report.Density{Pods: n, SteadyS: b.cfg.steady.Seconds(), ProbePeriodS: densityFloorProbe().Period.Seconds()}
	var skiffFP, kubeletFP **report.NodeFootprint
	if fp != nil {
		skiffFP, kubeletFP = &fp.Loaded, &fp.Kubelet
	}
	var err error
	// Interleaved: skiff, then the floor at each parallelism.
	if d.Skiff, err = b.agentDensity(ctx, b.skiff, n, b.cfg.steady, b.profilePath, fp, skiffFP); err != nil {
		return nil, err
	}
	for _, p := range b.cfg.floorParallelism {
		f, err := b.floorDensity(ctx, n, p, false)
		if err != nil {
			return nil, err
		}
		d.Floor = append(d.Floor, f)
	}
	// The probe-making floor only at the best plain parallelism: a fair
	// comparison for the agents' probing, without doubling the floor's time.
	if best, ok := report.BestFloor(d.Floor); ok {
		f, err := b.floorDensity(ctx, n, best.Parallelism, true)
		if err != nil {
			return nil, err
		}
		d.Floor = append(d.Floor, f)
	}
	err = b.withKubelet(ctx, func(k *agent) error {
		d.Kubelet, err = b.agentDensity(ctx, k, n, b.cfg.steady, "", fp, kubeletFP)
		return err
	})
	return d, err
}

// scale runs the density scenario at each scale pod count (the density
// scenario's own count reused) with skiff's node footprint at each into
// fp.Scale (fp nil: none).
func (b *bench) scale(ctx context.Context, density *report.Density, fp *report.Footprint) ([]report.Scale, error) {
	bestPar := 2
	if density != nil {
		if best, ok := report.BestFloor(density.Floor); ok {
			bestPar = best.Parallelism
		}
	}
	var out []report.Scale
	for _, n := range b.cfg.scale {
		if density != nil && n == density.Pods {
			s := report.Scale{Pods: n, Skiff: density.Skiff, Kubelet: density.Kubelet}
			for _, f := range density.Floor {
				if f.Parallelism == bestPar && !f.Probes {
					s.Floor = &f
				}
			}
			out = append(out, s)
			continue
		}
		s := report.Scale{Pods: n}
		var err error
		var window *report.NodeFootprint
		if s.Skiff, err = b.agentDensity(ctx, b.skiff, n, b.cfg.scaleSteady, "", fp, &window); err != nil {
			return out, err
		}
		if fp != nil && window != nil {
			fp.Scale = append(fp.Scale, *window)
		}
		if b.cfg.scaleFloor || (b.cfg.scaleFloorEnds && (n == slices.Min(b.cfg.scale) || n == slices.Max(b.cfg.scale))) {
			f, err := b.floorDensity(ctx, n, bestPar, false)
			if err != nil {
				return out, err
			}
			s.Floor = &f
		}
		if b.cfg.scaleKubelet {
			err = b.withKubelet(ctx, func(k *agent) error {
				s.Kubelet, err = b.agentDensity(ctx, k, n, b.cfg.scaleSteady, "", nil, nil)
				return err
			})
			if err != nil {
				return out, err
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b report.Scale) int { return a.Pods - b.Pods })
	return out, nil
}
