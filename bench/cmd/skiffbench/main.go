// Command skiffbench is skiff's benchmark harness (make bench, make
// bench-quick, issue 5). It drives the real skiff binary through a manifest
// directory, runs the same pods as a raw CRI floor on skiff's managed
// containerd, interleaved, and optionally the real kubelet (-kubelet) on the
// same containerd; it measures from outside (CRI timestamps, /proc) and
// writes a markdown report, the raw JSON and SVG plots. Must run as root.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"gonum.org/v1/plot/vg"

	"github.com/skiffnode/skiff/bench/internal/report"
)

// config is what a mode measures.
type config struct {
	mode             string
	startupPods      int
	densityPods      int
	steady           time.Duration
	idle             time.Duration // the node footprint's idle window, before the first scenario (issue 31)
	floorParallelism []int         // 0: unbounded
	reactionRuns     int
	scale            []int
	scaleSteady      time.Duration
	// scaleFloor: the floor also runs at the scale points other than the
	// density scenario's (whose floor the curve reuses). Off in full mode:
	// on 2 cores the floor's 10, 50 and 250 pods take ~6 min to start and
	// stop, a third of the 20-minute budget (issue 5); skiff's cost per pod
	// is what the curve shows.
	scaleFloor bool
	// scaleKubelet: the kubelet also runs at the scale points other than
	// the density scenario's. Off in full mode: the kubelet's 10, 50 and
	// 250 pods take ~8 min on 2 cores, and the curve is skiff's.
	scaleKubelet bool
	// scaleFloorEnds: the plain floor also runs at the lowest and the
	// highest scale point (where scaleFloor is off), so that skiff's cost
	// per pod across the curve can be set against the floor's own growth
	// (~5 min more on 2 cores, nearly all of it the 250 pods).
	scaleFloorEnds bool
	// probeWindow: how long the probe-making floor's harness CPU is
	// measured once its pods all run (its CPU per ExecSync); 0: not.
	probeWindow time.Duration
	// pullRuns: timed pulls each way in the pull scenario (issue 15).
	pullRuns int
	// listRuns: the API scenarios' timed LISTs of pods (kubectl get pods)
	// and the shim's create -> Running round trips (issue 17).
	listRuns int
	// shimConfigMaps: ConfigMaps the shim scenario creates beside its
	// density pods (issue 17: 200); shimServices: ClusterIP Services it
	// creates, each selecting some of those pods (issue 36: 50).
	shimConfigMaps, shimServices int
	// The writes scenario (issue 33): the density pods settle for
	// writesSettle once all run, then a window of writesWindow with no
	// churn and one with a pod replaced every writesChurn.
	writesSettle, writesWindow, writesChurn time.Duration
	// profileBase is the path prefix of the steady-window CPU profiles,
	// <out>/<date>-<mode>; "-<runtime>-steady.pprof" is appended (and
	// "-<runtime>-shim-heap.pprof" for the shim's heap profile). "": none.
	profileBase string
	// only: the scenarios to run (nil: all); partial: a subset or an
	// override, never reported as latest.
	only    map[string]bool
	partial bool
}

// defaultExternalPodsPerShim is skiff's --pods-per-shim on the external
// runtime: 1, skiff's default there, with the plain config. Above 1 the
// harness adds the shim group annotation to that containerd's config
// (decision 108 has the measured trade-off on containerd 1.6).
const defaultExternalPodsPerShim = 1

var modes = map[string]config{
	"quick": {mode: "quick", startupPods: 3, densityPods: 5, steady: 5 * time.Second, idle: 3 * time.Second, floorParallelism: []int{2, 0},
		reactionRuns: 1, scale: []int{2, 5}, scaleSteady: 3 * time.Second, scaleFloor: true, scaleKubelet: true, pullRuns: 3,
		probeWindow: 3 * time.Second, listRuns: 3, shimConfigMaps: 200, shimServices: 3,
		writesSettle: 3 * time.Second, writesWindow: 12 * time.Second, writesChurn: 3 * time.Second},
	"full": {mode: "full", startupPods: 20, densityPods: 110, steady: 60 * time.Second, idle: 10 * time.Second, floorParallelism: []int{4, 8, 0},
		reactionRuns: 3, scale: []int{10, 50, 110, 250}, scaleSteady: 10 * time.Second, scaleFloorEnds: true, pullRuns: 10,
		probeWindow: 20 * time.Second, listRuns: 10, shimConfigMaps: 200, shimServices: 50,
		writesSettle: time.Minute, writesWindow: 5 * time.Minute, writesChurn: 10 * time.Second},
}

type flags struct {
	mode, skiffBin, pauseBin, imagesDir, kubeletBin, out, root, skiffVersion, only, floorPar, runtimes, controlPlane, apiServer, render string
	densityPods, podsPerShim                                                                                                            int
	writesWindow                                                                                                                        time.Duration
	keep, latest                                                                                                                        bool
	skiffArgs                                                                                                                           stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var f flags
	flag.StringVar(&f.mode, "mode", "quick", "quick or full")
	flag.StringVar(&f.skiffBin, "skiff", "bin/skiff", "the skiff binary")
	flag.StringVar(&f.pauseBin, "pause", "", "the static Go pause binary of the external runtime's pause image (default: skiff-pause beside -skiff)")
	flag.StringVar(&f.runtimes, "runtimes", strings.Join(runtimeNames, ","), "comma-separated container runtimes to run on, in order: managed (skiff's own containerd), external (a containerd the harness starts with a plain CRI config); a subset is a partial run")
	flag.StringVar(&f.imagesDir, "images", "_output/images", "directory with busybox.tar and testserver.tar (make images)")
	flag.StringVar(&f.kubeletBin, "kubelet", "", "a kubelet binary; runs the kubelet column when set")
	flag.StringVar(&f.controlPlane, "controlplane", "", "the kube-controlplane binary (make controlplane); runs the API-pods scenario on the external runtime when set")
	flag.StringVar(&f.apiServer, "apiserver", "", "skiff's control plane shim, bin/skiff-apiserver (make build-apiserver); runs the shim scenario on the external runtime when set")
	flag.StringVar(&f.out, "out", "", "directory for <date>-<mode>.md/.json/-startup.svg/-scale.svg (required)")
	flag.StringVar(&f.root, "root", "", "skiff --root-dir (default: a new directory under /tmp; kept short for the socket path)")
	flag.StringVar(&f.skiffVersion, "skiff-version", "", "skiff version for the report (default: skiff's git describe)")
	flag.BoolVar(&f.keep, "keep", false, "keep the root directory (logs) afterwards")
	flag.BoolVar(&f.latest, "latest", false, "also copy the report to <out>/latest.md")
	flag.StringVar(&f.only, "only", "", "comma-separated scenarios to run (startup,density,burst,reaction,scale,pull,writes,api,shim; default all); a partial run is never latest")
	flag.StringVar(&f.floorPar, "floor-parallelism", "", "override the floor's parallelisms in the density scenario: comma-separated, 0 = unbounded, \"none\" (a partial run)")
	flag.Var(&f.skiffArgs, "skiff-arg", "an extra argument for skiff agent (repeatable; a partial run)")
	flag.IntVar(&f.podsPerShim, "external-pods-per-shim", defaultExternalPodsPerShim, "on the external runtime, skiff's --pods-per-shim; above 1 its containerd config also passes the shim group annotation (pod_annotations); not 1: a partial run")
	flag.IntVar(&f.densityPods, "density-pods", 0, "override the density scenario's pod count (a partial run, never latest)")
	flag.DurationVar(&f.writesWindow, "writes-window", 0, "override the writes scenario's window length, each of its two (a partial run, never latest)")
	flag.StringVar(&f.render, "render", "", "write the report of an earlier run again from its <date>-<mode>.json (beside it; with -latest also latest.md) instead of running")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if f.render != "" {
		if err := render(f.render, f.latest); err != nil {
			log.Error("render failed", "err", err)
			os.Exit(1)
		}
		return
	}
	if err := run(f, log); err != nil {
		log.Error("benchmark failed", "err", err)
		os.Exit(1)
	}
}

func run(f flags, log *slog.Logger) (retErr error) {
	cfg, ok := modes[f.mode]
	if !ok {
		return fmt.Errorf("-mode %q: want quick or full", f.mode)
	}
	if err := cfg.restrict(f.only, f.densityPods); err != nil {
		return err
	}
	if err := cfg.overrideFloor(f.floorPar); err != nil {
		return err
	}
	runtimes, err := cfg.selectRuntimes(f.runtimes)
	if err != nil {
		return err
	}
	if len(f.skiffArgs) > 0 || f.podsPerShim != defaultExternalPodsPerShim {
		cfg.partial = true
	}
	if f.podsPerShim < 1 {
		return fmt.Errorf("-external-pods-per-shim %d: want 1 or more", f.podsPerShim)
	}
	if f.writesWindow > 0 {
		cfg.writesWindow, cfg.partial = f.writesWindow, true
	}
	if cfg.partial {
		f.latest = false
	}
	if f.out == "" {
		return errors.New("-out is required")
	}
	if f.apiServer != "" {
		// skiff runs it by this path from its own working directory.
		if f.apiServer, err = filepath.Abs(f.apiServer); err != nil {
			return fmt.Errorf("-apiserver: %w", err)
		}
		if _, err := os.Stat(f.apiServer); err != nil {
			return fmt.Errorf("-apiserver: %w", err)
		}
	}
	if f.pauseBin == "" {
		f.pauseBin = filepath.Join(filepath.Dir(f.skiffBin), "skiff-pause")
	}
	if os.Geteuid() != 0 {
		return errors.New("the benchmark must run as root (it runs containerd and pods)")
	}
	began := time.Now()
	cfg.profileBase = filepath.Join(f.out, began.Format("2006-01-02")+"-"+cfg.mode)
	if cfg.partial {
		cfg.profileBase += "-partial"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := f.root
	if root == "" {
		if root, err = os.MkdirTemp("/tmp", "sb-"); err != nil {
			return fmt.Errorf("root dir: %w", err)
		}
	}
	res := &report.Results{Mode: cfg.mode, Date: began, Machine: machine(), Versions: versions(f)}
	var merr, terr error
	for _, rt := range runtimes {
		run, m, t := measureOn(ctx, f, cfg, rt, filepath.Join(root, rt), log)
		res.Runs = append(res.Runs, run)
		merr, terr = errors.Join(merr, m), errors.Join(terr, t)
		if m != nil || t != nil {
			break // a runtime left behind or failed: do not start the next
		}
	}
	switch {
	case f.keep:
		log.Info("root kept", "root", root)
	case terr != nil:
		log.Warn("teardown failed; root kept for inspection", "root", root)
	default:
		if err := os.RemoveAll(root); err != nil {
			log.Warn("removing root", "root", root, "err", err)
		}
	}
	res.DurationS = time.Since(began).Seconds()
	res.Notes = notes(cfg)
	if cfg.runs("shim") && f.apiServer == "" {
		res.Notes = append(res.Notes, "Control plane shim (issues 17, 36): not run, no -apiserver (bin/skiff-apiserver of make build-apiserver).")
	}
	if cfg.partial {
		res.Mode += "-partial"
		res.Notes = append(res.Notes, fmt.Sprintf("PARTIAL: only %q, density pods %d, runtimes %q.", f.only, cfg.densityPods, f.runtimes))
	}
	if merr != nil || terr != nil {
		// Keep what was measured, marked incomplete, but never as latest.
		res.Notes = append(res.Notes, "INCOMPLETE: "+errors.Join(merr, terr).Error())
		res.Mode += "-incomplete"
		return errors.Join(merr, terr, write(f.out, res, false))
	}
	return write(f.out, res, f.latest)
}

// measure runs the scenarios of runtime run.Runtime in order, filling run:
// startup, density, burst and writes on every runtime, reaction, scale and
// pull on the managed one only (time budget), API pods on the external one
// only.
func (b *bench) measure(ctx context.Context, run *report.Run) error {
	var err error
	rt := run.Runtime
	if b.cfg.runs("density") {
		// The node's footprint: idle now, loaded in the density scenario.
		run.Footprint = &report.Footprint{}
		b.idleFootprint(ctx, run.Footprint)
	}
	if b.cfg.runs("startup") {
		b.log.Info("scenario 1: startup latency", "runtime", rt, "pods", b.cfg.startupPods)
		if run.Startup, err = b.startup(ctx); err != nil {
			return fmt.Errorf("%s: startup scenario: %w", rt, err)
		}
	}
	if b.cfg.runs("density") {
		b.log.Info("scenario 2: density", "runtime", rt, "pods", b.cfg.densityPods)
		if run.Density, err = b.density(ctx, run.Footprint); err != nil {
			return fmt.Errorf("%s: density scenario: %w", rt, err)
		}
	}
	if b.cfg.runs("burst") {
		b.log.Info("scenario 2b: burst", "runtime", rt, "pods", len(burstPods()))
		if run.Burst, err = b.burst(ctx); err != nil {
			return fmt.Errorf("%s: burst scenario: %w", rt, err)
		}
	}
	if rt != report.RuntimeManaged {
		// The writes scenario before the API ones: they replace the
		// static-pod skiff.
		if err := b.measureWrites(ctx, run); err != nil {
			return err
		}
		if err := b.measureAPI(ctx, run); err != nil {
			return err
		}
		return b.measureShim(ctx, run)
	}
	if b.cfg.runs("reaction") {
		b.log.Info("scenario 3: reaction", "runtime", rt)
		if run.Reaction, err = b.reaction(ctx); err != nil {
			return fmt.Errorf("%s: reaction scenario: %w", rt, err)
		}
	}
	if b.cfg.runs("scale") {
		b.log.Info("scenario 4: scale", "runtime", rt, "pods", b.cfg.scale)
		if run.Scale, err = b.scale(ctx, run.Density, run.Footprint); err != nil {
			return fmt.Errorf("%s: scale scenario: %w", rt, err)
		}
	}
	if b.cfg.runs("pull") {
		b.log.Info("scenario 5: image pull", "runtime", rt, "runs", b.cfg.pullRuns)
		if run.Pull, err = b.pull(ctx); err != nil {
			return fmt.Errorf("%s: pull scenario: %w", rt, err)
		}
	}
	return b.measureWrites(ctx, run)
}

// measureAPI runs the API-pods scenario (issue 16) when it is selected
// and a control plane was given. It runs last: it replaces the static-pod
// skiff with one joined to the control plane and leaves it stopped.
func (b *bench) measureAPI(ctx context.Context, run *report.Run) error {
	if !b.cfg.runs("api") || b.controlPlane == "" {
		return nil
	}
	b.log.Info("scenario 6: API pods", "runtime", run.Runtime, "startup_pods", b.cfg.startupPods, "density_pods", b.cfg.densityPods)
	var err error
	if run.API, err = b.api(ctx); err != nil {
		return fmt.Errorf("%s: API scenario: %w", run.Runtime, err)
	}
	return nil
}

// measureShim runs the control plane shim scenario (issues 17, 36) when
// it is selected and -apiserver was given; after the API scenario, whose
// figures for kube-apiserver it is set against. It leaves skiff running
// with --control-plane (teardown stops it and deletes the service proxy's
// nftables table).
func (b *bench) measureShim(ctx context.Context, run *report.Run) error {
	if !b.cfg.runs("shim") || b.apiServer == "" {
		return nil
	}
	b.log.Info("scenario 7: control plane shim", "runtime", run.Runtime, "round_trips", b.cfg.listRuns, "density_pods", b.cfg.densityPods)
	var err error
	if run.Shim, err = b.shim(ctx); err != nil {
		return fmt.Errorf("%s: shim scenario: %w", run.Runtime, err)
	}
	return nil
}

// teardown removes every manifest and pod and stops skiff (and with it a
// managed containerd); after skiff with --control-plane it deletes the
// service proxy's nftables table, which skiff-apiserver leaves behind.
// Blocking.
func (b *bench) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var errs []error
	if entries, err := os.ReadDir(b.skiff.dir); err == nil {
		for _, e := range entries {
			_ = os.Remove(filepath.Join(b.skiff.dir, e.Name()))
		}
	}
	// Give skiff a moment to stop its pods itself, then remove whatever is
	// left, skiff's included.
	time.Sleep(2 * time.Second)
	if _, err := b.c.RemoveSandboxes(ctx, func(*runtimeapi.PodSandbox) bool { return true }); err != nil {
		errs = append(errs, fmt.Errorf("teardown: %w", err))
	}
	_ = b.c.Close()
	if err := b.skiff.stop(); err != nil {
		errs = append(errs, err)
	}
	if b.proxyTable {
		deleted, err := deleteNftTable(ctx, proxyTableFamily, proxyTableName)
		if err != nil {
			errs = append(errs, fmt.Errorf("teardown: the service proxy's table: %w", err))
		}
		b.log.Info("service proxy's nftables table", "table", proxyTableFamily+" "+proxyTableName, "deleted", deleted)
	}
	return errors.Join(errs...)
}

func notes(cfg config) []string {
	n := []string{
		"Startup: skiff and the kubelet are timed from the manifest's rename into the watched directory to the app container's CRI StartedAt; the floor from its RunPodSandbox call. The floor polls its init container's exit every 10 ms.",
		"Startup with volumes (issue 14): as many pods again, skiff and the floor alternately, after the plain ones; each app also mounts an emptyDir (/scratch), a configMap (/etc/config, one key app.conf, from a ConfigMap document before the Pod in the same manifest file) and a downwardAPI volume (/etc/podinfo: labels, name), read-only but the emptyDir. The floor writes the same directories and files as plain files under its own directory before its RunPodSandbox (that time counts, as skiff's does) and passes them as CRI mounts. The kubelet column is not run: the kubelet forbids static pods to reference ConfigMaps, which skiff's static ConfigMaps allow.",
		"Density: first/all running from the write of all manifests (floor: the first CRI call) to the earliest/latest app StartedAt; remove all: manifests deleted -> no running container and no ready sandbox (floor: StopContainer+StopPodSandbox for every pod). After that the harness waits, untimed, until skiff has also removed the pods' containers and sandboxes, so that its clean-up never overlaps the next measurement.",
		"Density pods request 10m cpu and 16Mi memory; where n x 10m exceeds the node's cpu capacity (250 pods on 2 cores) they request capacity/n instead, since an agent rejects the rest with OutOfcpu, as the kubelet does.",
		"The plain floor makes no probe calls: it is the CRI work of starting and stopping the pods. skiff and the kubelet also run each density pod's exec readiness probe (a runc exec, ~0.1-0.2 s of CPU here) every 10 s: with 110 pods those execs alone keep a 2-core node near saturation, so density times include them. The \"CRI floor + probes\" row, run at the best plain floor's parallelism, also makes that probe (one ExecSync of `true` every 10 s from each app's start until its stop, the first at once): the agents' figures are given against both.",
		"Burst: 12 different pods (inits, a sidecar, exec/httpGet/tcpSocket/grpc/startup probes, a crash loop, an OOM, plain ones) written at once; timed from the manifests' write to each pod's first container's CRI StartedAt (init or app; a crash loop's or OOM's first run). The gRPC probe targets the test server's grpc.health.v1 service.",
		"CPU and RSS are the agent process only (/proc/<pid>/stat utime+stime, VmRSS sampled once a second), not containerd, shims or pods.",
		"The kubelet kills pods it does not know, so its runs are not interleaved with the others: it is started for its part of each scenario (and given 10 s after its healthz answers before pods are written, so its start-up housekeeping is not counted) and stopped afterwards.",
		"Pull (issue 15, managed runtime): an image of two random 4 MiB layers in a loopback registry (plain HTTP, which containerd uses for loopback hosts without configuration), pulled through skiff's API (POST /images/pull on its unix socket, the path of `skiff images pull`, timed from the request to the result line) and by one CRI PullImage call, alternately (each pair in the other order than the last) after an untimed warm-up each way; the image is removed through CRI before every pull and each pull must fetch the layers from the registry again.",
		"Benchmarks are noisy on a shared 2-core machine: other work running beside the harness shifts every figure; compare ratios taken in the same run.",
	}
	switch {
	case cfg.scaleFloorEnds && !cfg.scaleFloor:
		n = append(n, fmt.Sprintf("Scale: at %d pods the floor column is the density scenario's best floor (and the kubelet column its kubelet run); the plain floor also runs at the lowest and the highest point, at the same parallelism, so that skiff's cost per pod can be set against the floor's own growth; at the other points only skiff runs, to keep the whole run short on 2 cores.", cfg.densityPods))
	case !cfg.scaleFloor:
		n = append(n, fmt.Sprintf("Scale: the floor column is the density scenario's best floor at %d pods (and the kubelet column its kubelet run); at the other points only skiff runs, to keep the whole run short on 2 cores.", cfg.densityPods))
	}
	n = append(n, "CPU profile: during the density scenario's steady window the harness fetches a CPU profile of skiff (Go's /debug/pprof/profile on skiff's unix socket, the window less a second) and saves it beside the report as <date>-<mode>-<runtime>-steady.pprof (`go tool pprof` reads it); the report breaks it into buckets by the functions on each sample's stack. The probe floor's CPU per exec is the harness process's own CPU (/proc/self/stat) over a window in which its probe floor pods all run and it does nothing but their ExecSyncs.")
	n = append(n, "Shim memory (issue 36): right after the shim's steady window, with its pods, Services and ConfigMaps still there, the harness reads skiff-apiserver's /proc/<pid>/status (VmRSS split into RssAnon, RssFile and RssShmem), then fetches its Go heap profile through its API as the admin (net/http/pprof's /debug/pprof/heap) and saves it beside the report as <date>-<mode>-<runtime>-shim-heap.pprof (`go tool pprof -sample_index=inuse_space` reads it); the report gives its in-use space, the heap objects live at the server's last GC as Go's sampling (one allocation per 512 KiB allocated, scaled up) estimates them, and the functions that allocated them. RSS holds more than that: the garbage GOGC lets grow until the next GC, goroutine stacks, the Go runtime's own structures and the executable's mapped pages (RssFile). A heap profile that fails is recorded in the report, never fails the scenario.")
	n = append(n, "Runtimes: each runtime runs on its own, one after the other (managed first), with its own skiff process, CRI client and, with -kubelet, its own kubelet; the floor runs on that runtime's containerd. Reaction and scale run on the managed runtime only, to keep the run within its time budget; startup and density (and the burst scenario) run on both.",
		"API pods (issue 16, external runtime, with -controlplane): the harness starts test/cluster's control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler of the same version as the kubelet, Node authorizer and NodeRestriction on), stops the static-pod skiff and starts skiff again with --kubeconfig (a client certificate of system:node:bench); after skiff's part it stops skiff, deletes the Node and runs the kubelet with the same kubeconfig. Pods are created with spec.nodeName set, eight create calls in flight at a time, and deleted with their grace period (5 s; the containers exit on SIGTERM).",
		fmt.Sprintf("Control plane shim (issues 17, 36; external runtime, with -apiserver, after the API pods): skiff restarted with --control-plane (skiff-apiserver as its child on a free port, with its service proxy and cluster DNS as by default; kube-apiserver in the API pods scenario runs without kube-proxy and CoreDNS, so the comparisons with it set skiff-apiserver doing that work against kube-apiserver doing none of it); ready after start is the agent's own log, \"started skiff-apiserver\" (after its exec) to \"skiff-apiserver ready\" (its /readyz answered 200, polled every 100 ms), cold on a fresh data dir and warm on a restart of the agent; once the Node is Ready and 10 s more, before any pod, the whole node at rest (the agent, skiff-apiserver from its pid file, the containerd with its shims and pause processes) is sampled together once a second over the idle window (%s), memory summed per sample; pods are created without spec.nodeName (the shim places them); create -> Running is a watch's first event with status.phase Running, as in the API pods scenario; the density pods are labelled into %d groups, then %d ConfigMaps and %d ClusterIP Services (one per group) are created and the harness waits until every pod is a ready endpoint of its Service's EndpointSlice; the LIST is kubectl get pods' (Accept: a Table, limit 500) through client-go's REST client; CPU and RSS of skiff-apiserver and of the agent over the steady window; then the pods and the Services are deleted (the ConfigMaps stay for the warm restart). After skiff's last stop the harness deletes the proxy's nftables table (%s %s).",
			cfg.idle, cfg.shimServices, cfg.shimConfigMaps, cfg.shimServices, proxyTableFamily, proxyTableName),
		fmt.Sprintf("Storage writes (issue 33; both runtimes, the kubelet on the external one): the density pods (%d) through the manifest directory, %s to settle once all run, then a %s window with no churn and a %s window in which the oldest pod's manifest is deleted and a new pod's written every %s (neither waited for). Per process /proc/<pid>/io write_bytes (pages dirtied, with reaped children's) and cancelled_write_bytes: the agent, its containerd, and that containerd's shims sampled once a second (a shim that starts in the window counts from zero, one that exits until its last sample); the block device's sectors written x 512 (/sys/dev/block/<maj:min>/stat of the bench root's filesystem: machine-wide), sync(2) at both ends of the window; files under the agent's root directory (not its manifests, not the managed containerd's directory) and its log whose modification time is inside the window. The API pods' and the shim's steady windows also read etcd's, kube-apiserver's, skiff-apiserver's (its embedded etcd) and the agent's counters.", cfg.densityPods, cfg.writesSettle, cfg.writesWindow, cfg.writesWindow, cfg.writesChurn),
		"External runtime: the harness starts /usr/bin/containerd itself with a plain CRI config as a kubelet user has it (runc v2 with cgroupfs, restrict_oom_score_adj, a pause image built from the Go skiff-pause binary, a CNI conflist of bridge cni-ext0 10.89.0.0/16 without masquerading + portmap + loopback) and imports the images with ctr; skiff runs with --container-runtime-endpoint, one shim per pod as the kubelet's pods (with -external-pods-per-shim N above 1, a partial run, the runc runtime's pod_annotations also lists io.containerd.runc.v2.group and skiff runs with --pods-per-shim N).")
	if cfg.mode == "quick" {
		n = append(n, "Quick mode: a few pods and short windows; the figures only show that the harness works.")
	}
	return n
}

// write puts <date>-<mode>.{md,json} and the plots into dir, and with
// latest a copy of the report as latest.md (its links are relative to dir).
func write(dir string, res *report.Results, latest bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output dir: %w", err)
	}
	base := res.Date.Format("2006-01-02") + "-" + res.Mode
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, base+".json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	plots := report.Plots{}
	for _, run := range res.Runs {
		p, err := writeRunPlots(dir, base, run)
		if err != nil {
			return err
		}
		plots[run.Runtime] = p
	}
	var buf bytes.Buffer
	if err := report.Markdown(&buf, res, report.IssueLimits, plots); err != nil {
		return err
	}
	names := []string{base + ".md"}
	if latest {
		names = append(names, "latest.md")
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	fmt.Println(filepath.Join(dir, base+".md"))
	return nil
}

// writeRunPlots writes run's startup and scale plots as
// <base>-<runtime>-startup.svg and -scale.svg into dir.
func writeRunPlots(dir, base string, run report.Run) (report.RunPlots, error) {
	var plots report.RunPlots
	if run.Startup != nil {
		p, err := report.StartupPlot(run.Startup)
		if err != nil {
			return plots, err
		}
		p.Title.Text += ", " + run.Runtime
		plots.Startup = base + "-" + run.Runtime + "-startup.svg"
		if err := report.WritePlots(filepath.Join(dir, plots.Startup), 6*vg.Inch, 4*vg.Inch, p); err != nil {
			return plots, err
		}
	}
	if len(run.Scale) > 0 {
		ps, err := report.ScalePlots(run.Scale)
		if err != nil {
			return plots, err
		}
		plots.Scale = base + "-" + run.Runtime + "-scale.svg"
		if err := report.WritePlots(filepath.Join(dir, plots.Scale), 4.5*vg.Inch, 3.5*vg.Inch, ps...); err != nil {
			return plots, err
		}
	}
	return plots, nil
}

// scenarios are the names -only accepts, in the order they run.
var scenarios = []string{"startup", "density", "burst", "reaction", "scale", "pull", "writes", "api", "shim"}

// runtimeNames are the runtimes -runtimes accepts, in the order they run.
var runtimeNames = []string{report.RuntimeManaged, report.RuntimeExternal}

// selectRuntimes parses list (comma-separated runtimeNames) into the
// runtimes to run, in runtimeNames' order; a subset makes the run partial.
func (cfg *config) selectRuntimes(list string) ([]string, error) {
	want := map[string]bool{}
	for _, r := range strings.Split(list, ",") {
		if !slices.Contains(runtimeNames, r) {
			return nil, fmt.Errorf("-runtimes %q: unknown runtime %q (want %s)", list, r, strings.Join(runtimeNames, ","))
		}
		want[r] = true
	}
	var out []string
	for _, r := range runtimeNames {
		if want[r] {
			out = append(out, r)
		}
	}
	if len(out) < len(runtimeNames) {
		cfg.partial = true
	}
	return out, nil
}

// restrict limits cfg to the scenarios in only (comma-separated; "" keeps
// all) and overrides the density pod count when densityPods > 0; either
// makes the run partial.
func (cfg *config) restrict(only string, densityPods int) error {
	if densityPods > 0 {
		cfg.densityPods, cfg.partial = densityPods, true
	}
	if only == "" {
		return nil
	}
	cfg.only, cfg.partial = map[string]bool{}, true
	for _, s := range strings.Split(only, ",") {
		if !slices.Contains(scenarios, s) {
			return fmt.Errorf("-only %q: unknown scenario %q (want %s)", only, s, strings.Join(scenarios, ","))
		}
		cfg.only[s] = true
	}
	return nil
}

// runs reports whether scenario s is to run.
func (cfg *config) runs(s string) bool { return cfg.only == nil || cfg.only[s] }

// overrideFloor replaces the density scenario's floor parallelisms with
// list (comma-separated, 0 = unbounded, "none" = no floor runs); "" keeps
// them. Any override makes the run partial.
func (cfg *config) overrideFloor(list string) error {
	if list == "" {
		return nil
	}
	cfg.partial, cfg.floorParallelism = true, nil
	if list == "none" {
		return nil
	}
	for _, p := range strings.Split(list, ",") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return fmt.Errorf("-floor-parallelism %q: %q is not a count", list, p)
		}
		cfg.floorParallelism = append(cfg.floorParallelism, n)
	}
	return nil
}
