package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// The shim scenario (issues 17, 36): skiff's own control plane. skiff is
// restarted with --control-plane, runs skiff-apiserver as its child, as a
// user gets it (its service proxy and cluster DNS on), and joins it as the
// Node "bench"; pods are created without spec.nodeName (the shim places
// them on its node). It runs on the external runtime, after the API
// scenario, so that its round trip and LIST are set against
// kube-apiserver's on the same containerd, agent and machine in one run
// (kube-apiserver there runs without kube-proxy or CoreDNS: the report
// says so).

// Log messages of controlplane/launch.go that bound the shim's start.
const (
	shimStartedMsg = "started skiff-apiserver"
	shimReadyMsg   = "skiff-apiserver ready"
)

// shimConfigMapBytes is the size of each ConfigMap's one value.
const shimConfigMapBytes = 1024

// shim runs the scenario: cold start and Node Ready, the whole node at
// rest, the round trips, the density pods with the ConfigMaps and the
// Services, the LISTs and the steady window, the pods' and the Services'
// deletion, then a warm restart of the agent. skiff is left running
// (teardown stops it and deletes the service proxy's nftables table).
func (b *bench) shim(ctx context.Context) (*report.Shim, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := b.skiff.stop(); err != nil {
		return nil, fmt.Errorf("stop the previous skiff: %w", err)
	}
	res := &report.Shim{Pods: b.cfg.densityPods, Services: b.cfg.shimServices, ConfigMaps: b.cfg.shimConfigMaps,
		ServiceProxy: true, SteadyS: b.cfg.steady.Seconds()}
	cs, err := b.startShimSkiff(ctx, port, &res.ReadyColdS)
	if err != nil {
		return nil, err
	}
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		res.Version = v.GitVersion
	}
	if err := sleepCtx(ctx, kubeletSettle); err != nil { // as the API scenario
		return nil, err
	}
	b.shimIdle(ctx, res) // before any pod
	if err := b.shimRoundTrips(ctx, cs, res); err != nil {
		return nil, err
	}
	if err := b.shimDensity(ctx, cs, res); err != nil {
		return nil, err
	}
	if err := b.skiff.stop(); err != nil {
		return nil, fmt.Errorf("stop skiff for the warm restart: %w", err)
	}
	if _, err := b.startShimSkiff(ctx, port, &res.ReadyWarmS); err != nil {
		return nil, fmt.Errorf("warm restart: %w", err)
	}
	b.log.Info("shim done", "ready_cold_s", res.ReadyColdS, "ready_warm_s", res.ReadyWarmS)
	return res, nil
}

// startShimSkiff starts skiff with --control-plane on port, waits until
// its Node is Ready in the shim, reads the shim's start -> ready from
// skiff's log into ready and returns the admin's clientset.
func (b *bench) startShimSkiff(ctx context.Context, port int, ready *float64) (kubernetes.Interface, error) {
	// skiff-apiserver's defaults: the service proxy and the cluster DNS
	// on (issue 36's budget is the server a user gets). The proxy leaves
	// its nftables table behind: teardown deletes it.
	b.proxyTable = true
	a, err := b.startSkiff("--control-plane", "--control-plane-port", strconv.Itoa(port), "--control-plane-binary", b.apiServer)
	if err != nil {
		return nil, fmt.Errorf("skiff with --control-plane: %w", err) // b.skiff stays the stopped one
	}
	b.skiff = a
	kubeconfig := filepath.Join(b.skiffRoot, "admin.kubeconfig")
	var cs kubernetes.Interface
	err = b.skiff.proc.waitFor(kubeconfig, apiWait, func() error {
		cs, err = shimClient(kubeconfig)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := waitNodeReady(ctx, cs, b.skiff); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(b.skiff.proc.log)
	if err != nil {
		return nil, fmt.Errorf("skiff log: %w", err)
	}
	if *ready, err = shimReadyFromLog(string(data)); err != nil {
		return nil, err
	}
	return cs, nil
}

// shimClient is the clientset of the admin kubeconfig the agent writes,
// with client-side rate limits high enough never to throttle the harness.
func shimClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("shim client: %w", err)
	}
	return cs, nil
}

// shimRoundTrips creates listRuns startup pods one after another without
// spec.nodeName: create -> Running in the API and create -> StartedAt.
func (b *bench) shimRoundTrips(ctx context.Context, cs kubernetes.Interface, res *report.Shim) error {
	var starts, runs []float64
	for i := range b.cfg.listRuns {
		s, r, err := b.apiStartOne(ctx, cs, b.skiff, apiPod(fmt.Sprintf("s-shim-st-%d", i), kindStartup, false))
		if err != nil {
			return err
		}
		starts, runs = append(starts, s), append(runs, r)
		b.log.Info("shim round trip", "pod", i, "started_s", s, "running_s", r)
	}
	res.Started, res.Running = report.NewSeries(starts), report.NewSeries(runs)
	return nil
}

// shimDensity creates the density pods, the ConfigMaps and the Services
// (and waits for the Services' endpoints), times the LISTs, samples the
// shim and the agent over the steady window (their CPU and RSS, and their
// writes: issue 33), records where the shim's memory is at its end
// (shimMemory) and deletes the pods, then the Services (the ConfigMaps
// stay, for the warm restart).
func (b *bench) shimDensity(ctx context.Context, cs kubernetes.Interface, res *report.Shim) error {
	pods, ag, err := b.apiDensityStart(ctx, cs, b.skiff, b.cfg.densityPods, false, shimServiceLabels(b.cfg.shimServices))
	if err != nil {
		return err
	}
	if err := createConfigMaps(ctx, cs, b.cfg.shimConfigMaps); err != nil {
		return err
	}
	if err := b.shimServices(ctx, cs, len(pods)); err != nil {
		return err
	}
	if res.ListPods, err = listPodsTable(ctx, cs, b.cfg.listRuns); err != nil {
		return err
	}
	pid, err := b.apiServerPid()
	if err != nil {
		return err
	}
	iow := b.startIOWindow(b.skiff, namedPid{"skiff-apiserver (etcd embedded)", pid}, namedPid{"skiff", b.skiff.pid()})
	w, err := sampleSteadyBoth(ctx, pid, b.skiff.pid(), b.cfg.steady)
	if err != nil {
		return fmt.Errorf("shim steady window: %w", err)
	}
	res.Writes = b.endIOWindow(iow)
	res.Shim, ag.Steady = w[0], w[1]
	res.Agent = ag
	b.log.Info("shim steady", "shim_cpu_pct", res.Shim.CPUPercent, "shim_rss_max_mb", res.Shim.RSSMaxMB,
		"list_median_s", res.ListPods.Summary.Median)
	b.shimMemory(ctx, cs, pid, res) // with the pods, Services and ConfigMaps still there
	if err := b.apiDensityDone(ctx, cs, b.skiff, pods, ag); err != nil {
		return err
	}
	return deleteServices(ctx, cs, b.cfg.shimServices)
}

// shimServices creates the scenario's Services and waits until each of
// the pods is a ready endpoint of its Service's slice (none: nothing).
func (b *bench) shimServices(ctx context.Context, cs kubernetes.Interface, pods int) error {
	n := b.cfg.shimServices
	if n <= 0 {
		return nil
	}
	t0 := time.Now()
	if err := createServices(ctx, cs, n); err != nil {
		return err
	}
	if err := waitServiceEndpoints(ctx, cs, pods); err != nil {
		return err
	}
	b.log.Info("shim services ready", "services", n, "endpoints", pods, "took_s", time.Since(t0).Seconds())
	return nil
}

// createConfigMaps creates n ConfigMaps of one shimConfigMapBytes value
// each in agentNamespace, apiCreateWorkers calls in flight.
func createConfigMaps(ctx context.Context, cs kubernetes.Interface, n int) error {
	value := strings.Repeat("x", shimConfigMapBytes)
	err := forEach(ctx, n, func(ctx context.Context, i int) error {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-cm-%d", i)}, Data: map[string]string{"value": value}}
		_, err := cs.CoreV1().ConfigMaps(agentNamespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("create %d ConfigMaps: %w", n, err)
	}
	return nil
}

// sampleSteadyBoth samples two processes over the same window d.
func sampleSteadyBoth(ctx context.Context, a, b int, d time.Duration) ([2]procfs.Window, error) {
	var out [2]procfs.Window
	var errs [2]error
	var wg sync.WaitGroup
	for i, pid := range []int{a, b} {
		wg.Go(func() { out[i], errs[i] = sampleSteady(ctx, pid, d) })
	}
	wg.Wait()
	return out, errors.Join(errs[0], errs[1])
}

// shimReadyFromLog returns the seconds from the last "started
// skiff-apiserver" line of a skiff log (slog's text format) to the
// "skiff-apiserver ready" line after it.
func shimReadyFromLog(log string) (float64, error) {
	var started, ready time.Time
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, `msg="`+shimStartedMsg+`"`):
			t, err := logTime(line)
			if err != nil {
				return 0, err
			}
			started, ready = t, time.Time{}
		case strings.Contains(line, `msg="`+shimReadyMsg+`"`) && !started.IsZero():
			t, err := logTime(line)
			if err != nil {
				return 0, err
			}
			ready = t
		}
	}
	if started.IsZero() || ready.IsZero() {
		return 0, fmt.Errorf("skiff's log has no %q line followed by %q", shimStartedMsg, shimReadyMsg)
	}
	return ready.Sub(started).Seconds(), nil
}

// logTime is the time= field of a slog text line.
func logTime(line string) (time.Time, error) {
	rest, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}, fmt.Errorf("log line without time=: %.120s", line)
	}
	v, _, _ := strings.Cut(rest, " ")
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("log line time: %w", err)
	}
	return t, nil
}

// readPidFile reads a process ID written as one decimal line.
func readPidFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	return pid, nil
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
