package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/internal/childproc"
)

// nodeName is the --hostname-override of both agents; static pod names get
// "-bench" appended.
const nodeName = "bench"

// podName is the name an agent gives the static pod of manifest name m.
func podName(m string) string { return m + "-" + nodeName }

// maxPods is both agents' --max-pods: above the largest scale point.
const maxPods = 300

// agentNamespace is the namespace of every manifest.
const agentNamespace = "default"

// process is a started agent binary.
type process struct {
	name string
	cmd  *exec.Cmd
	proc *childproc.Proc
	log  string
}

func startProcess(name, logPath, bin string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The agent must not outlive the harness; childproc keeps that signal
	// from firing early (it stopped the external containerd between the
	// API and the shim scenarios when test/cluster's goroutines ended the
	// thread that had forked it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	proc, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s %s: %w", name, bin, err)
	}
	return &process{name: name, cmd: cmd, proc: proc, log: logPath}, nil
}

// stop sends SIGTERM and waits up to a minute, then SIGKILL. Blocking,
// idempotent.
func (p *process) stop() error {
	select {
	case <-p.proc.Done():
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.proc.Done():
		return nil
	case <-time.After(time.Minute):
	}
	_ = p.cmd.Process.Kill()
	<-p.proc.Done()
	return fmt.Errorf("%s did not stop within a minute of SIGTERM and was killed", p.name)
}

// waitFor polls check every 100 ms until it succeeds, the process exits or
// timeout passes.
func (p *process) waitFor(what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-p.proc.Done():
			exit := p.proc.Err()
			if exit == nil {
				exit = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited while waiting for %s (%w); log %s ends with:\n%s", p.name, what, exit, p.log, tail(p.log, 20))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not ready after %s: %w; log %s ends with:\n%s", p.name, what, timeout, err, p.log, tail(p.log, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// agent is an agent under test driven through a manifest directory.
type agent struct {
	name   string // "skiff" or "kubelet"
	prefix string // manifest name prefix
	dir    string // --pod-manifest-path
	proc   *process
	// stateDir is the directory the agent bind-mounts onto itself (shared,
	// for the propagation of pod volume mounts) and leaves mounted: the
	// kubelet's --root-dir, skiff's <root-dir>/pods.
	stateDir string
	// sock is the agent's local API socket serving /debug/pprof (skiff's
	// <root-dir>/skiff.sock); "": none.
	sock string
	// drains: the agent removes a deleted pod's sandbox at once, so the
	// harness waits for that after a timed removal (skiff). The kubelet
	// leaves dead sandboxes to its garbage collector; withKubelet cleans up.
	drains bool
}

// pid is the agent process, for /proc sampling.
func (a *agent) pid() int { return a.proc.cmd.Process.Pid }

// startSkiff starts `skiff agent` with its root dir root and waits until
// its API answers /healthz. With endpoint "" skiff starts its managed
// containerd under root and imports the image archives, which are copied
// into root/images first (imported by the time /healthz answers); else it
// dials endpoint (unix://...), where the images must be already.
func startSkiff(bin, root, imagesDir, endpoint string, extra []string) (*agent, error) {
	a := &agent{name: "skiff", prefix: "s", dir: filepath.Join(root, "manifests-skiff"), drains: true,
		stateDir: filepath.Join(root, "pods")}
	for _, d := range []string{a.dir, filepath.Join(root, "images"), filepath.Join(root, "podlogs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("skiff directories: %w", err)
		}
	}
	args := []string{"agent",
		"--pod-manifest-path", a.dir, "--root-dir", root, "--hostname-override", nodeName,
		"--pod-logs-dir", filepath.Join(root, "podlogs"),
		// The scale curve goes beyond the kubelet's default of 110 pods.
		"--max-pods", itoa(maxPods)}
	if endpoint != "" {
		args = append(args, "--container-runtime-endpoint", endpoint)
	} else {
		for _, img := range []string{"busybox.tar", "testserver.tar"} {
			if err := copyFile(filepath.Join(imagesDir, img), filepath.Join(root, "images", img)); err != nil {
				return nil, err
			}
		}
	}
	args = append(args, extra...)
	p, err := startProcess("skiff", filepath.Join(root, "skiff.log"), bin, args...)
	if err != nil {
		return nil, err
	}
	a.proc = p
	sock := filepath.Join(root, "skiff.sock")
	a.sock = sock
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	if err := p.waitFor("/healthz", 2*time.Minute, func() error { return healthz(hc, "http://skiff/healthz") }); err != nil {
		_ = p.stop()
		return nil, err
	}
	return a, nil
}

// startKubelet starts the kubelet in standalone mode on the given CRI
// socket, with what it needs on a cgroup v1 machine without systemd, and
// waits for its healthz; extra arguments (--kubeconfig) come last.
func startKubelet(bin, root, criSocket string, extra ...string) (*agent, error) {
	a := &agent{name: "kubelet", prefix: "k", dir: filepath.Join(root, "manifests-kubelet"), stateDir: filepath.Join(root, "kubelet")}
	kroot := a.stateDir
	for _, d := range []string{a.dir, kroot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("kubelet directories: %w", err)
		}
	}
	args := []string{"--pod-manifest-path=" + a.dir,
		"--container-runtime-endpoint=unix://" + criSocket,
		"--root-dir=" + kroot,
		"--hostname-override=" + nodeName,
		"--address=127.0.0.1",
		"--read-only-port=10255",
		"--healthz-port=10248",
		"--fail-swap-on=false",
		// The kubelet refuses cgroup v1 by default since 1.35.
		"--fail-cgroupv1=false",
		"--cgroups-per-qos=false",
		"--enforce-node-allocatable=",
		"--cgroup-driver=cgroupfs",
		"--eviction-hard=",
		"--image-gc-high-threshold=100",
		"--image-gc-low-threshold=99",
		"--max-pods=" + itoa(maxPods),
		"--resolv-conf=/etc/resolv.conf",
		"--v=1",
	}
	p, err := startProcess("kubelet", filepath.Join(root, "kubelet.log"), bin, append(args, extra...)...)
	if err != nil {
		return nil, err
	}
	a.proc = p
	hc := &http.Client{Timeout: 5 * time.Second}
	if err := p.waitFor("healthz and read-only /pods", 3*time.Minute, func() error {
		if err := healthz(hc, "http://127.0.0.1:10248/healthz"); err != nil {
			return err
		}
		return healthz(hc, "http://127.0.0.1:10255/pods")
	}); err != nil {
		_ = p.stop()
		return nil, err
	}
	return a, nil
}

func healthz(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// stop stops the agent's process and unmounts its stateDir (see there);
// mounts of pod volumes would be below it.
func (a *agent) stop() error {
	err := a.proc.stop()
	if a.stateDir != "" {
		if uerr := unix.Unmount(a.stateDir, unix.MNT_DETACH); uerr != nil && !errors.Is(uerr, unix.EINVAL) && !errors.Is(uerr, unix.ENOENT) {
			err = errors.Join(err, fmt.Errorf("unmount %s state %s: %w", a.name, a.stateDir, uerr))
		}
	}
	return err
}

// stopKubelet stops the kubelet and removes the sandboxes it left behind
// (everything not skiff's and not the floor's).
func stopKubelet(ctx context.Context, a *agent, c *criops.Client) error {
	err := a.stop()
	if _, rerr := c.RemoveSandboxes(ctx, func(s *runtimeapi.PodSandbox) bool {
		return s.Labels[criops.LabelSkiffManaged] == "" && s.Metadata.GetNamespace() != floorNamespace
	}); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// writeManifests writes every manifest under a temporary name, then renames
// them all into place, and returns the time just before the first rename:
// the moment the agent can first see them.
func writeManifests(dir string, manifests map[string][]byte) (time.Time, error) {
	for name, data := range manifests {
		if err := os.WriteFile(filepath.Join(dir, "."+name+".tmp"), data, 0o644); err != nil {
			return time.Time{}, fmt.Errorf("write manifest %s: %w", name, err)
		}
	}
	t0 := time.Now()
	for name := range manifests {
		if err := os.Rename(filepath.Join(dir, "."+name+".tmp"), filepath.Join(dir, name+".yaml")); err != nil {
			return t0, fmt.Errorf("rename manifest %s: %w", name, err)
		}
	}
	return t0, nil
}

// removeManifests deletes the manifests of names and returns the time just
// before the first removal.
func removeManifests(dir string, names []string) (time.Time, error) {
	t0 := time.Now()
	for _, n := range names {
		if err := os.Remove(filepath.Join(dir, n+".yaml")); err != nil {
			return t0, fmt.Errorf("remove manifest %s: %w", n, err)
		}
	}
	return t0, nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("image archive (run make images): %w", err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return fmt.Errorf("copy image archive: %w", err)
	}
	return nil
}

// version runs bin with args and returns the first line of its output.
func version(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func itoa(i int) string { return strconv.Itoa(i) }
