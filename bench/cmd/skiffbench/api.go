package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/report"
	"github.com/skiffnode/skiff/test/cluster"
)

// The API scenario (issue 16): pods created through a real kube-apiserver
// (test/cluster's control plane, built by make controlplane), bound to the
// node by spec.nodeName, run by skiff joined with --kubeconfig and then by
// the kubelet joined the same way, as the same Node "bench", on the same
// containerd. Never both agents at once: they would both run the node's
// pods.

// apiCreateWorkers is how many create (and delete) calls the harness has
// in flight for the density pods.
const apiCreateWorkers = 8

// apiWait bounds waiting for a Node to turn Ready.
const apiWait = 2 * time.Minute

// api runs the scenario: it starts the control plane, replaces the
// static-pod skiff by one joined to it, measures skiff, stops it, deletes
// its Node, and measures the kubelet (with -kubelet). skiff stays stopped
// afterwards (teardown's stop is idempotent).
func (b *bench) api(ctx context.Context) (*report.API, error) {
	cl, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(b.dir, "cluster"), Bin: b.controlPlane,
		NodeNames: []string{nodeName}, Logf: func(format string, args ...any) { b.log.Info(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			b.log.Warn("stopping the control plane", "err", err)
		}
	}()
	cs, err := apiClient(cl)
	if err != nil {
		return nil, err
	}
	res := &report.API{ControlPlane: version(b.controlPlane, "kube-apiserver", "--version"), StartupPods: b.cfg.startupPods}
	kubeconfig := cl.Kubeconfig(nodeName)
	if err := b.skiff.stop(); err != nil {
		return nil, fmt.Errorf("stop the static-pod skiff: %w", err)
	}
	if b.skiff, err = b.startSkiff("--kubeconfig", kubeconfig); err != nil {
		return nil, fmt.Errorf("skiff with --kubeconfig: %w", err)
	}
	// As long as withKubeletArgs gives the kubelet, so that neither is
	// timed during its start-up work.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(kubeletSettle):
	}
	sk, err := b.apiAgent(ctx, cs, b.skiff, true)
	if err != nil {
		return nil, err
	}
	res.Startup.Skiff, res.Running.Skiff, res.ListPods = sk.started, sk.running, sk.list
	res.Density = &report.Density{Pods: b.cfg.densityPods, SteadyS: b.cfg.steady.Seconds(), Skiff: sk.density}
	res.Writes = &report.APIWrites{Skiff: sk.writes}
	if err := b.skiff.stop(); err != nil {
		return nil, err
	}
	// The kubelet registers the Node anew, so its Ready is its own.
	if err := cs.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("delete skiff's Node: %w", err)
	}
	err = b.withKubeletArgs(ctx, []string{"--kubeconfig=" + kubeconfig}, func(k *agent) error {
		kb, err := b.apiAgent(ctx, cs, k, true)
		res.Startup.Kubelet, res.Running.Kubelet, res.Density.Kubelet, res.Writes.Kubelet = kb.started, kb.running, kb.density, kb.writes
		return err
	})
	return res, err
}

// apiClient is the cluster admin's clientset with client-side rate limits
// high enough that the harness's calls are never throttled.
func apiClient(cl *cluster.Cluster) (kubernetes.Interface, error) {
	cfg, err := cl.RESTConfig("admin")
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("api client: %w", err)
	}
	return cs, nil
}

// apiFigures are what apiAgent measured for one agent.
type apiFigures struct {
	// started: create -> app StartedAt; running: create -> phase Running
	// in the API; list: kubectl's LIST of pods at the density point.
	started, running, list *report.Series
	density                *report.Agent
	// writes: the control plane's and the agent's over the steady window.
	writes *report.ControlPlaneWrites
}

// apiAgent waits for a's Node to be Ready, then runs the startup series
// and the density run for a; bind sets spec.nodeName on every pod (else
// the API server places them: skiff-apiserver).
func (b *bench) apiAgent(ctx context.Context, cs kubernetes.Interface, a *agent, bind bool) (apiFigures, error) {
	var f apiFigures
	if err := waitNodeReady(ctx, cs, a); err != nil {
		return f, err
	}
	var starts, runs []float64
	for i := range b.cfg.startupPods {
		s, r, err := b.apiStartOne(ctx, cs, a, apiPod(fmt.Sprintf("%s-api-st-%d", a.prefix, i), kindStartup, bind))
		if err != nil {
			return f, err
		}
		starts, runs = append(starts, s), append(runs, r)
		b.log.Info("api startup", "agent", a.name, "pod", i, "started_s", s, "running_s", r)
	}
	f.started, f.running = report.NewSeries(starts), report.NewSeries(runs)
	pods, res, err := b.apiDensityStart(ctx, cs, a, b.cfg.densityPods, bind, nil)
	if err != nil {
		return f, err
	}
	if f.list, err = listPodsTable(ctx, cs, b.cfg.listRuns); err != nil {
		return f, err
	}
	b.log.Info("api list pods", "agent", a.name, "pods", len(pods), "median_s", f.list.Summary.Median)
	if res.Steady, f.writes, err = b.apiSteadyWindow(ctx, a); err != nil {
		return f, fmt.Errorf("%s API density steady window: %w", a.name, err)
	}
	f.density = res
	return f, b.apiDensityDone(ctx, cs, a, pods, res)
}

// waitNodeReady polls the Node until it is Ready, or a exits.
func waitNodeReady(ctx context.Context, cs kubernetes.Interface, a *agent) error {
	return a.proc.waitFor("its Node Ready in the API", apiWait, func() error {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := cs.CoreV1().Nodes().Get(gctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not Ready")
	})
}

// apiPod is the API object of the pod of kind named name, bound to the
// node by spec.nodeName when bind.
func apiPod(name string, kind podKind, bind bool) *v1.Pod {
	p := podOf(name, kind, 1)
	if bind {
		p.Spec.NodeName = nodeName
	}
	return p
}

// apiStartOne creates pod (one startup pod), waits for its app container
// and for the API to report it Running, and returns create call ->
// StartedAt and create call -> phase Running, as seen by a watch from the
// created object's resourceVersion (a watch from "now" opened before the
// create fails on a kube-apiserver whose pod watch cache has seen no
// event yet: "Too large resource version"); the pod is then deleted and
// waited for.
func (b *bench) apiStartOne(ctx context.Context, cs kubernetes.Interface, a *agent, pod *v1.Pod) (started, running float64, err error) {
	name := pod.Name
	wctx, cancel := context.WithTimeout(ctx, runTimeout(1))
	defer cancel()
	t0 := time.Now()
	created, err := cs.CoreV1().Pods(agentNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("create pod %s: %w", name, err)
	}
	w, err := cs.CoreV1().Pods(agentNamespace).Watch(wctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return 0, 0, fmt.Errorf("watch pod %s: %w", name, err)
	}
	defer w.Stop()
	// Read on its own goroutine, so that an event is timed when it arrives.
	phase := make(chan phaseResult, 1)
	go func() { at, err := waitPhaseRunning(w); phase <- phaseResult{at, err} }()
	pods := []string{name}
	startedAt, err := b.c.WaitRunning(wctx, pods, criops.InPods(agentNamespace, "app", pods), poll)
	if err != nil {
		return 0, 0, fmt.Errorf("%s API startup pod %s: %w", a.name, name, err)
	}
	r := <-phase
	if r.err != nil {
		return 0, 0, fmt.Errorf("%s API startup pod %s: %w", a.name, name, r.err)
	}
	if _, err := b.apiDelete(ctx, cs, a, pods); err != nil {
		return 0, 0, err
	}
	return startedAt[name].Sub(t0).Seconds(), r.at.Sub(t0).Seconds(), nil
}

// phaseResult is waitPhaseRunning's answer.
type phaseResult struct {
	at  time.Time
	err error
}

// waitPhaseRunning reads w until a pod in it has status.phase Running and
// returns when that event arrived; it fails when the watch ends first.
func waitPhaseRunning(w watch.Interface) (time.Time, error) {
	var seen []string
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return time.Time{}, fmt.Errorf("watch: %w", apierrors.FromObject(ev.Object))
		}
		if p, ok := ev.Object.(*v1.Pod); ok {
			if p.Status.Phase == v1.PodRunning {
				return time.Now(), nil
			}
			seen = append(seen, string(ev.Type)+" "+string(p.Status.Phase))
		}
	}
	return time.Time{}, fmt.Errorf("watch ended before the pod was Running in the API (events: %v)", seen)
}

// apiDensityStart creates n density pods at once (bound to the node when
// bind; pod i with the labels labels(i) unless labels is nil) and waits
// for all to run; it returns their names and the agent's figures with
// first and all running filled in.
func (b *bench) apiDensityStart(ctx context.Context, cs kubernetes.Interface, a *agent, n int, bind bool, labels func(i int) map[string]string) ([]string, *report.Agent, error) {
	pods := make([]string, n)
	cpu := *resource.NewMilliQuantity(densityCPUMilli(n, goruntime.NumCPU()), resource.DecimalSI)
	t0 := time.Now()
	err := forEach(ctx, n, func(ctx context.Context, i int) error {
		pods[i] = fmt.Sprintf("%s-api-d%d-%d", a.prefix, n, i)
		p := apiPod(pods[i], kindDensity, bind)
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = cpu
		if labels != nil {
			p.Labels = labels(i)
		}
		_, err := cs.CoreV1().Pods(agentNamespace).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create %d API pods: %w", n, err)
	}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	started, err := b.c.WaitRunning(wctx, pods, criops.InPods(agentNamespace, "app", pods), densityPoll)
	if err != nil {
		return nil, nil, fmt.Errorf("%s API density %d: %w", a.name, n, err)
	}
	first, last := spanOf(started)
	res := &report.Agent{Pods: n, FirstRunningS: first.Sub(t0).Seconds(), AllRunningS: last.Sub(t0).Seconds()}
	b.log.Info("api density running", "agent", a.name, "pods", n, "first_s", res.FirstRunningS, "all_s", res.AllRunningS)
	return pods, res, nil
}

// apiDensityDone deletes the density pods, timing it into res.
func (b *bench) apiDensityDone(ctx context.Context, cs kubernetes.Interface, a *agent, pods []string, res *report.Agent) error {
	var err error
	if res.RemoveAllS, err = b.apiDelete(ctx, cs, a, pods); err != nil {
		return err
	}
	b.log.Info("api density done", "agent", a.name, "pods", len(pods), "cpu_pct", res.Steady.CPUPercent, "rss_max_mb", res.Steady.RSSMaxMB, "remove_s", res.RemoveAllS)
	return nil
}

// tableAccept is the Accept header of `kubectl get` (server-side printing).
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// listPodsTable times n LISTs of the pods in agentNamespace as `kubectl
// get pods` makes them (a Table, limit 500) through client-go's REST
// client, one after another; an answer that is not a Table fails.
func listPodsTable(ctx context.Context, cs kubernetes.Interface, n int) (*report.Series, error) {
	var out []float64
	for range n {
		t0 := time.Now()
		raw, err := cs.CoreV1().RESTClient().Get().Namespace(agentNamespace).Resource("pods").
			Param("limit", "500").SetHeader("Accept", tableAccept).DoRaw(ctx)
		took := time.Since(t0).Seconds()
		if err != nil {
			return nil, fmt.Errorf("list pods as a Table: %w", err)
		}
		if !bytes.Contains(raw, []byte(`"kind":"Table"`)) {
			return nil, fmt.Errorf("list pods as a Table: the answer is not a Table: %.200s", raw)
		}
		out = append(out, took)
	}
	return report.NewSeries(out), nil
}

// apiDelete deletes the pods (their own grace period) and returns the
// seconds until none of them is left in the API: the agent stopped each
// and made the final delete. Then, untimed, it waits for a draining
// agent's removal of the sandboxes (see agentRemoveTimed).
func (b *bench) apiDelete(ctx context.Context, cs kubernetes.Interface, a *agent, pods []string) (float64, error) {
	t0 := time.Now()
	err := forEach(ctx, len(pods), func(ctx context.Context, i int) error {
		err := cs.CoreV1().Pods(agentNamespace).Delete(ctx, pods[i], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete %d API pods: %w", len(pods), err)
	}
	wctx, cancel := context.WithTimeout(ctx, runTimeout(len(pods)))
	defer cancel()
	p := poll
	if len(pods) > 1 {
		p = removePoll
	}
	set := make(map[string]bool, len(pods))
	for _, n := range pods {
		set[n] = true
	}
	for {
		list, err := cs.CoreV1().Pods(agentNamespace).List(wctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
		if err != nil {
			return 0, fmt.Errorf("%s: waiting for %d deleted API pods: %w", a.name, len(pods), err)
		}
		left := 0
		for _, p := range list.Items {
			if set[p.Name] {
				left++
			}
		}
		if left == 0 {
			break
		}
		select {
		case <-wctx.Done():
			return 0, fmt.Errorf("%s: %d of %d deleted API pods still in the API: %w", a.name, left, len(pods), wctx.Err())
		case <-time.After(p):
		}
	}
	took := time.Since(t0).Seconds()
	if a.drains {
		if err := b.c.WaitGone(wctx, agentNamespace, pods, p); err != nil {
			return 0, fmt.Errorf("%s: %w", a.name, err)
		}
	}
	return took, nil
}

// forEach calls fn for 0..n-1 on apiCreateWorkers goroutines and returns
// the first error; it returns once every call has. The context passed to
// fn is cancelled at the first error.
func forEach(ctx context.Context, n int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, apiCreateWorkers) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
