package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffnode/skiff/internal/childproc"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/cri"
)

// Timeouts are failure guards only; tests never rely on them for timing.
const (
	agentStartTimeout = 2 * time.Minute
	agentStopTimeout  = time.Minute
	podStartTimeout   = 2 * time.Minute
	// podGoneTimeout covers the default 30 s grace period plus slack.
	podGoneTimeout = 90 * time.Second
)

// Env is one test's view of the suite: its own manifest directory, pod logs
// directory and agent processes, sharing the suite's root directory.
type Env struct {
	s *Suite
	// Dir holds everything of this test; ManifestDir is the agent's
	// --pod-manifest-path and PodLogsDir its --pod-logs-dir.
	Dir, ManifestDir, PodLogsDir string

	agent     *agentProc // the running agent, nil when none
	agentLogs []string   // log files of every agent this test started
	// startFailed records an agent that died during start-up; cleanup then
	// does not try another.
	startFailed bool
	http        *http.Client
	rt          *cri.Runtime
	// preexisting is what the host held before a faults scenario started
	// (network namespaces, bridge ports, IP records): not its leaks.
	preexisting map[string]bool
	// rootDir, when set, is the agent's --root-dir instead of the suite's
	// root (useRootDir).
	rootDir string
	// afterAgent runs at the end of cleanup, once the agent has stopped
	// (what the agent needs until then, e.g. a CRI proxy), last first.
	afterAgent []func()
}

// AgentOptions tune one agent start.
type AgentOptions struct {
	// Args are appended to the standard flags.
	Args []string
	// Bin, if set, is the skiff executable to start instead of the suite's.
	Bin string
	// Env are VAR=value pairs added to the test's environment.
	Env []string
}

// agentProc is a running `skiff agent`.
type agentProc struct {
	cmd  *exec.Cmd
	proc *childproc.Proc
}

// NewEnv prepares a test's directories, or skips the test when the suite is
// disabled. Its cleanup removes the test's manifests, waits until the agent
// has removed every pod from its API and from the runtime, stops the agent
// and dumps the agent logs if the test failed.
func NewEnv(t *testing.T) *Env {
	t.Helper()
	s := theSuite
	if s == nil {
		t.Skip(skipReason)
	}
	dir := filepath.Join(s.Root, "t", strconv.FormatInt(s.tests.Add(1), 10))
	e := &Env{s: s, Dir: dir, ManifestDir: filepath.Join(dir, "manifests"), PodLogsDir: filepath.Join(dir, "podlogs")}
	for _, d := range []string{e.ManifestDir, e.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.http = unixHTTPClient(filepath.Join(s.Root, "skiff.sock"))
	t.Cleanup(func() { e.cleanup(t) })
	return e
}

// unixHTTPClient talks HTTP to an agent's API socket.
func unixHTTPClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}, Timeout: 10 * time.Second}
}

// root is the agent's --root-dir: the suite's root unless useRootDir.
func (e *Env) root() string {
	if e.rootDir != "" {
		return e.rootDir
	}
	return e.s.Root
}

// useRootDir makes dir the --root-dir of the agents this test starts from
// now on (and where its API socket is).
func (e *Env) useRootDir(dir string) {
	e.rootDir = dir
	e.http = unixHTTPClient(filepath.Join(dir, "skiff.sock"))
}

// PodName is the name the agent gives the static pod of a manifest.
func PodName(manifestName string) string { return manifestName + "-" + nodeName }

// StartAgent starts `skiff agent` for this test and waits until its
// /healthz answers 200. The agent's output goes to a per-test log file. In
// external mode the agent dials the suite's containerd
// (--container-runtime-endpoint, before opts.Args, which may override it).
func (e *Env) StartAgent(t *testing.T, opts AgentOptions) {
	t.Helper()
	if e.agent != nil {
		t.Fatal("StartAgent: an agent is already running")
	}
	logPath := filepath.Join(e.Dir, fmt.Sprintf("agent-%d.log", len(e.agentLogs)+1))
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	e.agentLogs = append(e.agentLogs, logPath)
	args := []string{"agent",
		"--pod-manifest-path", e.ManifestDir,
		"--root-dir", e.root(),
		"--hostname-override", nodeName,
		"--pod-logs-dir", e.PodLogsDir,
		"--v", "4",
	}
	if e.s.external != nil {
		args = append(args, "--container-runtime-endpoint", e.s.external.endpoint())
	}
	args = append(args, opts.Args...)
	bin := e.s.Bin
	if opts.Bin != "" {
		bin = opts.Bin
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	// The agent must not outlive a test binary that dies; childproc keeps
	// the signal from firing when a goroutine that exits locked (the
	// suite's containerd supervisor, killed by the faults suite) ends the
	// thread that forked.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	proc, err := childproc.Start(cmd)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	p := &agentProc{cmd: cmd, proc: proc}
	e.agent = p
	e.waitHealthy(t, p)
}

// waitHealthy polls /healthz until it answers 200 or the agent exits.
func (e *Env) waitHealthy(t *testing.T, p *agentProc) {
	t.Helper()
	deadline := time.Now().Add(agentStartTimeout)
	var last string
	for {
		select {
		case <-p.proc.Done():
			e.agent, e.startFailed = nil, true
			t.Fatalf("agent exited during start-up: %v\n%s", p.proc.Err(), e.agentLogTail())
		default:
		}
		code, body, err := e.get("/healthz")
		if err == nil && code == http.StatusOK {
			return
		}
		last = fmt.Sprintf("code %d body %q err %v", code, body, err)
		if time.Now().After(deadline) {
			_ = p.cmd.Process.Kill()
			<-p.proc.Done()
			e.agent, e.startFailed = nil, true
			t.Fatalf("agent not healthy after %s (last: %s)", agentStartTimeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StopAgent sends SIGTERM and waits for the agent to exit; a graceful
// shutdown must exit with status 0.
func (e *Env) StopAgent(t *testing.T) {
	t.Helper()
	e.stopAgent(t, syscall.SIGTERM, true)
}

// KillAgent sends SIGKILL and waits for the agent to be gone.
func (e *Env) KillAgent(t *testing.T) {
	t.Helper()
	e.stopAgent(t, syscall.SIGKILL, false)
}

func (e *Env) stopAgent(t *testing.T, sig syscall.Signal, wantClean bool) {
	t.Helper()
	p := e.agent
	if p == nil {
		t.Fatal("no agent running")
	}
	e.agent = nil
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal agent: %v", err)
	}
	select {
	case <-p.proc.Done():
	case <-time.After(agentStopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.proc.Done()
		t.Fatalf("agent did not exit within %s of %s", agentStopTimeout, sig)
	}
	if wantClean && p.proc.Err() != nil {
		t.Errorf("agent exit after %s: %v (want status 0)", sig, p.proc.Err())
	}
}

// AgentLog returns the combined output of every agent this test started.
func (e *Env) AgentLog(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, p := range e.agentLogs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read agent log: %v", err)
		}
		b.Write(data)
	}
	return b.String()
}

// agentLogTail returns the last part of the current agent log, for errors.
func (e *Env) agentLogTail() string {
	if len(e.agentLogs) == 0 {
		return ""
	}
	data, _ := os.ReadFile(e.agentLogs[len(e.agentLogs)-1])
	const tailBytes = 16 << 10
	if len(data) > tailBytes {
		data = data[len(data)-tailBytes:]
	}
	return "--- agent log tail ---\n" + string(data)
}

// WriteManifest writes a manifest file atomically: a temporary file named
// .tmp-* (which the agent ignores) renamed into place.
func (e *Env) WriteManifest(t *testing.T, name, yaml string) {
	t.Helper()
	f, err := os.CreateTemp(e.ManifestDir, ".tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(yaml); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), filepath.Join(e.ManifestDir, name)); err != nil {
		t.Fatal(err)
	}
}

// RemoveManifest deletes a manifest file.
func (e *Env) RemoveManifest(t *testing.T, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(e.ManifestDir, name)); err != nil {
		t.Fatal(err)
	}
}

// Skiff runs a skiff CLI subcommand against this suite's agent and returns
// its combined output.
func (e *Env) Skiff(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.s.Bin, append(args, "--root-dir", e.root())...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cleanup runs at the end of every test; see NewEnv.
func (e *Env) cleanup(t *testing.T) {
	defer e.dumpLogsIfFailed(t)
	defer func() {
		for i := len(e.afterAgent) - 1; i >= 0; i-- {
			e.afterAgent[i]()
		}
	}()
	e.removeAllManifests(t)
	if e.agent == nil && len(e.agentLogs) > 0 && !e.startFailed {
		// The test left the agent stopped: start one to tear the pods down.
		e.StartAgent(t, AgentOptions{})
	}
	if e.agent != nil {
		e.waitAllPodsGone(t)
		e.StopAgent(t)
	}
	if e.rt != nil {
		_ = e.rt.Close()
	}
}

func (e *Env) dumpLogsIfFailed(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, p := range e.agentLogs {
		data, _ := os.ReadFile(p)
		t.Logf("--- %s ---\n%s", p, data)
	}
}

func (e *Env) removeAllManifests(t *testing.T) {
	entries, err := os.ReadDir(e.ManifestDir)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, ent := range entries {
		if err := os.Remove(filepath.Join(e.ManifestDir, ent.Name())); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// waitAllPodsGone waits until /pods is empty and the runtime holds no
// sandbox and no container; on timeout it fails the test and removes the
// leftovers through CRI so the next test starts clean.
func (e *Env) waitAllPodsGone(t *testing.T) {
	deadline := time.Now().Add(podGoneTimeout)
	var left string
	for time.Now().Before(deadline) {
		left = e.leftovers(t)
		if left == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("cleanup: pods not removed within %s after their manifests were deleted: %s", podGoneTimeout, left)
	e.forceRemoveSandboxes(t)
}

// leftovers describes pods still in /pods or the runtime ("" when none).
func (e *Env) leftovers(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := e.Pods()
	if err != nil {
		return "GET /pods: " + err.Error()
	}
	sbs, err := e.CRI(t).ListSandboxes(ctx, nil)
	if err != nil {
		return "list sandboxes: " + err.Error()
	}
	ctrs, err := e.CRI(t).ListContainers(ctx, criAll())
	if err != nil {
		return "list containers: " + err.Error()
	}
	// What containerd cannot remove (runtimeStuck) is reported by the
	// faults suite, not left over by the agent.
	sbs = slices.DeleteFunc(sbs, func(sb *runtime.Sandbox) bool { return e.s.runtimeStuck[sb.ID] })
	ctrs = slices.DeleteFunc(ctrs, func(c *runtime.Container) bool { return e.s.runtimeStuck[c.SandboxID] })
	if len(pods.Items) == 0 && len(sbs) == 0 && len(ctrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("pods %v, %d sandboxes, %d containers", names, len(sbs), len(ctrs))
}

func (e *Env) forceRemoveSandboxes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sbs, err := e.CRI(t).ListSandboxes(ctx, nil)
	if err != nil {
		t.Logf("force cleanup: %v", err)
		return
	}
	for _, sb := range sbs {
		if err := errors.Join(e.rt.StopSandbox(ctx, sb.ID), e.rt.RemoveSandbox(ctx, sb.ID)); err != nil {
			t.Logf("force cleanup of sandbox %s: %v", sb.ID, err)
		}
	}
}
