// Command conformance runs Kubernetes' [NodeConformance] e2e tests against
// skiff (issue 16, `make conformance`): a control plane (test/cluster) on
// loopback, a loopback registry (internal/testregistry) serving the e2e
// images rebuilt from local binaries (images.go) as mirrors of
// registry.k8s.io, one skiff agent as the only node, and the upstream
// e2e.test binary (built by the separate module test/conformance/k8s, so
// skiff's module never imports k8s.io/kubernetes) driven by the ginkgo CLI.
//
// It writes into -out: e2e.log (the suite's output), junit_01.xml,
// summary.md (pass/fail/skip counts and the failing tests with their first
// failure line), agent.log, skiff-apiserver.log (-node skiff-control-plane)
// and cluster/ (the components' logs). The agent
// and containerd must own the machine: run it under the machine lock
// (flock /tmp/skiff-bench.lock), as the Makefile target does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/internal/childproc"
	"github.com/skiffnode/skiff/internal/testregistry"
	"github.com/skiffnode/skiff/runtime/containerd"
	"github.com/skiffnode/skiff/runtime/cri"
	"github.com/skiffnode/skiff/test/cluster"
)

const nodeName = "skiff-node"

// DefaultSkip are the NodeConformance tests not run by default: none is
// skipped for want of a skiff feature; see -skip.
const defaultSkip = ""

type options struct {
	e2e, ginkgo, controlplane, skiff, agnhost, nnp, pause, images, k8sSrc string
	curl, nc, sh, bash, kubectl, dig, getent                              string
	out, focus, skip, label                                               string
	node, kubelet, apiserver                                              string
	kubeProxy, coredns, nft                                               string
	addons                                                                bool
	procs                                                                 int
	timeout                                                               time.Duration
	keep, dryRun, summaryOnly, verbose                                    bool
	agentArgs                                                             string
}

func main() {
	var o options
	flag.StringVar(&o.e2e, "e2e", "", "the e2e.test binary (k8s.io/kubernetes/test/e2e)")
	flag.StringVar(&o.ginkgo, "ginkgo", "", "the ginkgo CLI; empty runs e2e.test serially")
	flag.StringVar(&o.controlplane, "controlplane", "", "the kube-controlplane binary (make controlplane)")
	flag.StringVar(&o.skiff, "skiff", "bin/skiff", "the skiff binary")
	flag.StringVar(&o.agnhost, "agnhost", "", "a static agnhost binary")
	flag.StringVar(&o.nnp, "nnp", "", "a static nnp binary (test/images/nonewprivs)")
	flag.StringVar(&o.pause, "pause", "bin/skiff-pause", "a static pause binary")
	flag.StringVar(&o.images, "images", "_output/images", "the directory of make images (busybox.tar)")
	flag.StringVar(&o.curl, "curl", "/usr/bin/curl", "the curl put into the agnhost image with its libraries (empty: none)")
	flag.StringVar(&o.nc, "nc", "/bin/nc.openbsd", "the nc (netcat-openbsd) put into the agnhost image with its libraries (empty or missing: busybox's)")
	flag.StringVar(&o.sh, "sh", "/bin/dash", "the shell put into the agnhost image as /bin/sh with its libraries (empty or missing: busybox's)")
	flag.StringVar(&o.bash, "bash", "/bin/bash", "the bash put into the agnhost image as /bin/bash with its libraries (empty or missing: none)")
	flag.StringVar(&o.dig, "dig", "/usr/bin/dig", "the dig (bind9-dnsutils) put into the agnhost and glibc-dns-testing images with its libraries (empty or missing: none)")
	flag.StringVar(&o.getent, "getent", "/usr/bin/getent", "the getent (libc-bin) put into the agnhost and glibc-dns-testing images (empty or missing: none)")
	flag.StringVar(&o.k8sSrc, "k8s-src", "", "the k8s.io/kubernetes module directory")
	flag.StringVar(&o.out, "out", "_output/conformance", "output directory")
	flag.StringVar(&o.focus, "focus", `\[NodeConformance\]`, "ginkgo focus regexp")
	flag.StringVar(&o.skip, "skip", defaultSkip, "ginkgo skip regexp")
	flag.StringVar(&o.label, "label-filter", "", "ginkgo label filter")
	flag.IntVar(&o.procs, "procs", 6, "parallel ginkgo processes (with -ginkgo)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "the suite's timeout (ginkgo --timeout)")
	flag.BoolVar(&o.keep, "keep", false, "keep the agent's root directory")
	flag.BoolVar(&o.verbose, "verbose", false, "ginkgo -v, the processes' output not intercepted: every spec's result is in e2e.log, which summary.md is made from when a process died and ginkgo wrote no JUnit report")
	flag.BoolVar(&o.dryRun, "dry-run", false, "only list the tests the focus selects (no cluster)")
	flag.BoolVar(&o.summaryOnly, "summary-only", false, "only rewrite summary.md from the JUnit report in -out")
	flag.StringVar(&o.agentArgs, "agent-args", "", "extra flags of the node agent (skiff or the kubelet), space separated")
	flag.StringVar(&o.node, "node", "skiff", "the node agent: skiff, kubelet (the upstream kubelet -kubelet on skiff's containerd, for the side-by-side pass rate), or skiff-control-plane (skiff agent --control-plane as the whole cluster, with -apiserver)")
	flag.StringVar(&o.apiserver, "apiserver", "bin/skiff-apiserver", "skiff-apiserver, with -node skiff-control-plane")
	flag.StringVar(&o.kubelet, "kubelet", "", "the kubelet binary, with -node kubelet (make bench-kubelet)")
	flag.BoolVar(&o.addons, "addons", false, "the full suite's cluster: the API server advertised on the default route's address, kube-proxy (nftables) and CoreDNS as pods on the node, the node with --cluster-dns")
	flag.StringVar(&o.kubeProxy, "kube-proxy", "", "a static kube-proxy binary, with -addons")
	flag.StringVar(&o.coredns, "coredns", "", "a static coredns binary, with -addons")
	flag.StringVar(&o.nft, "nft", "/usr/sbin/nft", "the host's nft (Debian's nftables), put into the kube-proxy image with its libraries, with -addons")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s conformance: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func abs(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func run(ctx context.Context, o options) error {
	for _, p := range []*string{&o.e2e, &o.ginkgo, &o.controlplane, &o.skiff, &o.agnhost, &o.nnp, &o.pause, &o.images, &o.k8sSrc, &o.out, &o.kubelet, &o.kubeProxy, &o.coredns, &o.apiserver} {
		*p = abs(*p)
	}
	if o.summaryOnly {
		sum, err := summarize(filepath.Join(o.out, "junit_01.xml"), filepath.Join(o.out, "summary.md"), 0, o)
		fmt.Println(sum)
		return err
	}
	if o.e2e == "" {
		return errors.New("-e2e is required")
	}
	switch {
	case o.node != "skiff" && o.node != "kubelet" && o.node != nodeControlPlane:
		return fmt.Errorf("-node %q: want skiff, kubelet or %s", o.node, nodeControlPlane)
	case o.node == nodeControlPlane && o.addons:
		return fmt.Errorf("-node %s has its own service proxy and DNS: drop -addons", nodeControlPlane)
	case o.node == "kubelet" && o.kubelet == "":
		return errors.New("-node kubelet needs -kubelet (make bench-kubelet builds it)")
	case o.addons && (o.kubeProxy == "" || o.coredns == ""):
		return errors.New("-addons needs -kube-proxy and -coredns (make conformance-full builds them)")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if o.dryRun {
		return runSuite(ctx, o, "", true)
	}
	if os.Geteuid() != 0 {
		return errors.New("must run as root (the agent runs containers)")
	}
	began := time.Now()
	// -out is the run's own directory: the last run's files go.
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}

	// The registry: the e2e images under their registry.k8s.io paths.
	reg, err := testregistry.Start(testregistry.Options{PlainHTTP: true})
	if err != nil {
		return err
	}
	defer reg.Close()
	in := imageInputs{
		busyboxTar: filepath.Join(o.images, "busybox.tar"), agnhost: o.agnhost, pause: o.pause, nnp: o.nnp, k8sSrc: o.k8sSrc, curl: o.curl, nc: o.nc, sh: o.sh, bash: o.bash,
		dig: o.dig, getent: o.getent,
	}
	var advertise string
	if o.addons {
		in.kubeProxy, in.coredns, in.nft = o.kubeProxy, o.coredns, o.nft
		if advertise, err = advertiseAddress(); err != nil {
			return err
		}
	}
	refs, err := buildAndPush(ctx, in, reg)
	if err != nil {
		return err
	}
	logf("registry %s serves %s", reg.URL(), strings.Join(refs, " "))

	root, err := os.MkdirTemp("/tmp", "skconf-")
	if err != nil {
		return err
	}
	var rt *containerd.Managed // the kubelet's; skiff stops its own
	// kube-proxy, of the add-ons or inside skiff-apiserver, leaves its
	// tables when it stops: the next run's would start from them.
	proxies := o.addons || o.node == nodeControlPlane
	if proxies {
		removeKubeProxyTables(o.nft)
	}
	defer func() {
		teardown(root, o.keep, func() { stopRuntime(rt) })
		if proxies {
			removeKubeProxyTables(o.nft)
		}
	}()
	regFile := filepath.Join(root, "registries.yaml")
	if err := os.WriteFile(regFile, []byte(fmt.Sprintf("mirrors:\n  registry.k8s.io:\n    endpoint: [%q]\n", reg.URL())), 0o644); err != nil {
		return err
	}

	n, err := startNode(ctx, o, root, regFile, advertise)
	defer n.stop()
	rt = n.rt
	if err != nil {
		return err
	}
	logf("node %s Ready after %v", nodeName, time.Since(began).Round(time.Second))

	// kubectl for the suite: the control plane's multi-call binary picks
	// kubectl by its name.
	kubectl := filepath.Join(root, "bin", "kubectl")
	if err := os.MkdirAll(filepath.Dir(kubectl), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(o.controlplane, kubectl); err != nil {
		return err
	}
	o.kubectl = kubectl
	if o.addons {
		server, err := serverAt(n.cluster.Server(), advertise)
		if err != nil {
			return err
		}
		if err := deployAddons(ctx, o, n.admin, server, n.client); err != nil {
			return err
		}
	}
	suiteErr := runSuite(ctx, o, n.admin, false)
	sum, err := summarize(filepath.Join(o.out, "junit_01.xml"), filepath.Join(o.out, "summary.md"), time.Since(began), o)
	if err != nil {
		logf("summary: %v", err)
	} else {
		fmt.Println(sum)
	}
	if suiteErr != nil {
		logf("e2e suite: %v (failures are in the summary)", suiteErr)
	}
	// The agent leaves its pods running when it stops, and its containerd
	// stops with it: delete them through the API first, so that their
	// sandboxes (network namespaces, veths) go the normal way.
	if o.addons {
		removeAddons(n.client) // or their controllers make new pods while draining
	}
	drainPods(n.client)
	// Pods deleted at once (grace 0, or their namespace) in the suite's
	// last seconds may still have sandboxes: remove them while the
	// agent's containerd still runs (teardown's try comes after it has
	// stopped, for the kubelet's runtime), or their pause processes and
	// network namespaces outlive the run.
	removeSandboxes(root)
	if o.node == nodeControlPlane {
		// The API server's log (its controllers' errors) outlives root.
		if err := copyFile(filepath.Join(root, "apiserver", "skiff-apiserver.log"), filepath.Join(o.out, "skiff-apiserver.log"), 0o644); err != nil {
			logf("skiff-apiserver.log: %v", err)
		}
	}
	return nil
}

// testNode is the cluster under test: the node agent and the API server
// it joined.
type testNode struct {
	agent   *agentProc
	rt      *containerd.Managed // the kubelet's runtime; skiff stops its own
	cluster *cluster.Cluster    // nil with -node skiff-control-plane
	client  kubernetes.Interface
	admin   string // the admin kubeconfig
}

// startNode starts the cluster of -node (test/cluster and skiff or the
// kubelet, or skiff's own control plane) and waits for the node to be
// Ready. It returns what it started even with an error: the caller
// stops it (and the kubelet's runtime, n.rt) either way.
func startNode(ctx context.Context, o options, root, regFile, advertise string) (*testNode, error) {
	n := &testNode{}
	if o.node == nodeControlPlane {
		agent, cs, admin, err := startControlPlaneAgent(ctx, o, root, regFile)
		if err != nil {
			return n, err
		}
		n.agent, n.client, n.admin = agent, cs, admin
	} else {
		c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(o.out, "cluster"), Bin: o.controlplane, NodeNames: []string{nodeName}, Logf: logf, AdvertiseAddress: advertise})
		if err != nil {
			return n, err
		}
		n.cluster, n.client, n.admin = c, c.Client(), c.Kubeconfig("admin")
		if o.node == "kubelet" {
			k, err := startKubelet(ctx, o, c, root, regFile)
			if err != nil {
				return n, err
			}
			n.agent, n.rt = k.proc, k.rt
		} else if n.agent, err = startAgent(o, c, root, regFile); err != nil {
			return n, err
		}
	}
	return n, waitNodeReady(ctx, n.client, n.agent)
}

func (n *testNode) stop() {
	if n.agent != nil {
		n.agent.stop()
	}
	if n.cluster != nil {
		if err := n.cluster.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
	}
}

// drainPods deletes every pod left (namespaces the suite was still
// deleting) with a one-second grace and waits up to two minutes for the
// agent to have terminated them (it removes them from the API server).
func drainPods(cs kubernetes.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	grace := int64(1) // not 0: that removes the object before the agent has torn the pod down
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		logf("pods left after the suite: %v", err)
	}
}

// runSuite runs e2e.test (through ginkgo with -ginkgo), its output into
// out/e2e.log and the terminal.
func runSuite(ctx context.Context, o options, kubeconfig string, dry bool) error {
	e2eArgs := []string{
		"--provider=skeleton",
		"--report-dir=" + o.out,
		"--report-prefix=",
		"--allowed-not-ready-nodes=0",
		"--node-os-distro=debian",
		"--dump-logs-on-failure=true",
		"--disable-log-dump",
		"-v=2",
	}
	if kubeconfig != "" {
		e2eArgs = append(e2eArgs, "--kubeconfig="+kubeconfig, "--kubectl-path="+o.kubectl)
	}
	var cmd *exec.Cmd
	if o.ginkgo != "" {
		args := []string{"--focus=" + o.focus, "--timeout=" + o.timeout.String(), "--no-color", "--silence-skips", "--poll-progress-after=10m"}
		if o.skip != "" {
			args = append(args, "--skip="+o.skip)
		}
		if o.label != "" {
			args = append(args, "--label-filter="+o.label)
		}
		if o.verbose && !dry {
			args = append(args, "-v", "--output-interceptor-mode=none")
		}
		if dry {
			args = append(args, "--dry-run", "-v")
		} else if o.procs > 1 {
			args = append(args, "-p", "--procs="+strconv.Itoa(o.procs))
		}
		args = append(append(args, o.e2e, "--"), e2eArgs...)
		cmd = exec.CommandContext(ctx, o.ginkgo, args...)
	} else {
		args := []string{"--ginkgo.focus=" + o.focus, "--ginkgo.timeout=" + o.timeout.String(), "--ginkgo.no-color"}
		if o.skip != "" {
			args = append(args, "--ginkgo.skip="+o.skip)
		}
		if o.label != "" {
			args = append(args, "--ginkgo.label-filter="+o.label)
		}
		if dry {
			args = append(args, "--ginkgo.dry-run", "--ginkgo.v")
		}
		cmd = exec.CommandContext(ctx, o.e2e, append(args, e2eArgs...)...)
	}
	name := "e2e.log"
	if dry {
		name = "dry-run.log"
	}
	logFile, err := os.Create(filepath.Join(o.out, name))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = o.out
	// The suite's own timeout ends it; this one only guards a hang.
	cmd.WaitDelay = time.Minute
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	logf("running %s (output in %s)", strings.Join(cmd.Args, " "), logFile.Name())
	return cmd.Run()
}

// agentProc is the running skiff agent (or kubelet).
type agentProc struct {
	cmd  *exec.Cmd
	proc *childproc.Proc
}

// startProc starts cmd with SIGKILL as its parent-death signal, through
// childproc (the signal must not fire when test/cluster's goroutines end
// a thread).
func startProc(cmd *exec.Cmd) (*agentProc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := childproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &agentProc{cmd: cmd, proc: p}, nil
}

func startAgent(o options, c *cluster.Cluster, root, regFile string) (*agentProc, error) {
	manifests := filepath.Join(root, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(o.out, "agent.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := []string{"agent",
		"--root-dir", root,
		"--pod-manifest-path", manifests,
		"--pod-logs-dir", filepath.Join(root, "logs"),
		"--hostname-override", nodeName,
		"--registry-config", regFile,
		// The kubelet API with skiff's defaults (issue 29): client
		// certificates of the kubeconfig's CA, tokens through TokenReview,
		// Webhook authorization, no anonymous requests.
		"--kubeconfig", c.Kubeconfig(nodeName),
		"--serialize-image-pulls=false",
		"--v", "2",
	}
	if o.addons {
		args = append(args, "--cluster-dns", dnsServiceIP, "--cluster-domain", clusterDomain)
	}
	args = append(args, strings.Fields(o.agentArgs)...)
	bin, err := copyAgent(o.skiff, filepath.Join(root, "bin"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("start agent: %w", err)
	}
	logf("agent started: %s (copy of %s) %s", bin, o.skiff, strings.Join(args, " "))
	return p, nil
}

func (p *agentProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.proc.Done():
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.proc.Done()
	}
}

func waitNodeReady(ctx context.Context, cs kubernetes.Interface, agent *agentProc) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-agent.proc.Done():
			return false, fmt.Errorf("agent exited: %w", agent.proc.Err())
		default:
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
				// The node lifecycle controller removes the
				// not-ready taint a moment later.
				for _, t := range n.Spec.Taints {
					if t.Key == v1.TaintNodeNotReady {
						return false, nil
					}
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready: %w", nodeName, err)
	}
	return nil
}

// teardown removes what the agent left: sandboxes, the managed containerd
// (stopRuntime stops the kubelet's) and its shims (by PID, matched on the
// unique root), mounts, the root.
func teardown(root string, keep bool, stopRuntime func()) {
	removeSandboxes(root)
	stopRuntime()
	killProcessesUnder(root)
	unmountUnder(root)
	if keep {
		logf("keeping %s", root)
		return
	}
	if err := os.RemoveAll(root); err != nil {
		logf("remove %s: %v", root, err)
	}
}

// removeSandboxes stops and removes every pod sandbox of the containerd
// under root, if it still answers.
func removeSandboxes(root string) {
	sock := "unix://" + filepath.Join(root, "containerd", "containerd.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := cri.New(ctx, sock, 30*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = rt.Close() }()
	sbs, err := rt.ListSandboxes(ctx, nil)
	if err != nil {
		return
	}
	removed := 0
	for _, sb := range sbs {
		_ = rt.StopSandbox(ctx, sb.ID) // RemoveSandbox says if it mattered
		if err := rt.RemoveSandbox(ctx, sb.ID); err != nil {
			logf("remove sandbox %s: %v", sb.ID, err)
			continue
		}
		removed++
	}
	if len(sbs) > 0 {
		logf("removed %d of %d sandboxes left after the suite", removed, len(sbs))
	}
}

func killProcessesUnder(root string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), root) {
			continue
		}
		_ = unix.Kill(pid, unix.SIGTERM)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

func unmountUnder(root string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], root+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = unix.Unmount(points[i], unix.MNT_DETACH)
	}
}

// copyAgent copies skiff and its own runtime (make runtime: containerd, the
// runc shim and runc beside it) into dir and returns the copy of skiff: a
// rebuild of bin/ during the run must touch neither the running agent nor
// its containerd, and skiff's managed mode finds the runtime beside its
// executable (without it, it would run the containerd on PATH).
func copyAgent(skiff, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, name := range containerd.BundledPrograms {
		if err := copyFile(filepath.Join(filepath.Dir(skiff), name), filepath.Join(dir, name), 0o755); err != nil {
			return "", fmt.Errorf("skiff's runtime (make runtime): %w", err)
		}
	}
	bin := filepath.Join(dir, "skiff")
	return bin, copyFile(skiff, bin, 0o755)
}

func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}
