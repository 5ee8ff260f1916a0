package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/skiffnode/skiff/internal/imagebuild"
	"github.com/skiffnode/skiff/internal/supervisor"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/cri"
)

// requireRoot skips unless SKIFF_ROOT_TESTS=1 (set by make integration,
// which make test runs); then it insists on root and a containerd binary.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getenv("SKIFF_ROOT_TESTS") != "1" {
		t.Skip("set SKIFF_ROOT_TESTS=1 and run as root to run tests that need root and containerd (make integration)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("SKIFF_ROOT_TESTS=1 needs root")
	}
	if _, err := exec.LookPath(DefaultBinary); err != nil {
		t.Fatalf("containerd not found: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

// buildPause builds cmd/skiff-pause statically into dir.
func buildPause(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the pause executable: %v", err)
	}
	out := filepath.Join(dir, "pause")
	cmd := exec.Command(goBin, "build", "-o", out, "../../cmd/skiff-pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pause: %v\n%s", err, b)
	}
	return out
}

// writeBusybox writes a busybox image archive to path.
func writeBusybox(t *testing.T, path, ref string) {
	t.Helper()
	files := []imagebuild.File{{Path: "bin"}, {Path: "bin/busybox", Mode: 0o755, HostPath: "/bin/busybox"}, {Path: "etc"}, {Path: "tmp", Mode: 0o1777}}
	for _, name := range []string{"sh", "sleep", "echo", "cat", "ls", "hostname", "ip", "httpd", "mkdir", "wget"} {
		files = append(files, imagebuild.File{Path: "bin/" + name, Linkname: "busybox"})
	}
	cfg := imagebuild.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}}
	if err := imagebuild.WriteArchive(path, ref, files, cfg); err != nil {
		t.Fatal(err)
	}
}

// TestManagedContainerdRunsPods is the end-to-end proof that pods run on
// this machine: managed containerd + CNI bridge + imported images + CRI.
func TestManagedContainerdRunsPods(t *testing.T) {
	requireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logger := testLogger(t)

	// Unix socket paths are limited to 108 bytes: stay short, under /tmp.
	root, err := os.MkdirTemp("/tmp", "skt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if link, err := netlink.LinkByName("skt0"); err == nil {
			_ = netlink.LinkDel(link)
		}
		if t.Failed() {
			t.Logf("keeping %s for inspection", root)
			return
		}
		_ = os.RemoveAll(root)
	})

	pauseExe := buildPause(t, root)
	pauseRef, err := PauseImageRef(pauseExe)
	if err != nil {
		t.Fatal(err)
	}
	const podCIDR = "10.99.0.0/24"
	if _, err := network.WriteBridgeConflist(filepath.Join(root, "cni", "net.d"), network.BridgeConfig{
		Name: "skifftest", Bridge: "skt0", PodCIDR: podCIDR, IPAMDataDir: filepath.Join(root, "cni", "ipam"),
	}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{RootDir: root, SandboxImage: pauseRef, Ready: cri.Ping, Logger: logger}
	m, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = m.Stop(ctx)
	})

	imp, err := NewImporter(m.Address(), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	got, err := EnsurePauseImage(ctx, imp, pauseExe, filepath.Join(root, "cache"))
	if err != nil || got != pauseRef {
		t.Fatalf("EnsurePauseImage = %q, %v; want %q", got, err, pauseRef)
	}
	if _, err := EnsurePauseImage(ctx, imp, pauseExe, filepath.Join(root, "cache")); err != nil {
		t.Fatalf("second EnsurePauseImage: %v", err)
	}

	imagesDir := filepath.Join(root, "images")
	if err := os.MkdirAll(imagesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	const busybox = "skiff.local/busybox:test"
	writeBusybox(t, filepath.Join(imagesDir, "busybox.tar"), busybox)
	if err := os.WriteFile(filepath.Join(imagesDir, "README.txt"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := imp.ImportDir(ctx, imagesDir)
	if err != nil || len(names) != 1 || names[0] != busybox {
		t.Fatalf("ImportDir = %v, %v; want [%s]", names, err, busybox)
	}

	r, err := cri.New(ctx, m.Endpoint(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Runs before containerd stops (cleanups run last-in first-out) and
	// uses the latest r: leave no pods behind, even when the test fails.
	t.Cleanup(func() {
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sbs, err := r.ListSandboxes(ctx, map[string]string{"io.skiff.managed": "true"})
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		for _, s := range sbs {
			if err := r.RemoveSandbox(ctx, s.ID); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
	v, err := r.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("runtime: %s", v)
	waitImage(ctx, t, r, busybox)
	waitImage(ctx, t, r, pauseRef)

	// A pod on the bridge network.
	podLogs := filepath.Join(root, "logs", "default_web_uid1")
	sb := &runtime.SandboxSpec{
		Name: "web", Namespace: "default", UID: "uid1", Hostname: "web",
		LogDirectory: podLogs,
		PortMappings: []runtime.PortMapping{{Protocol: "TCP", ContainerPort: 8080, HostPort: 18080}},
		DNS:          &runtime.DNSConfig{Servers: []string{"10.255.255.53"}, Searches: []string{"example.test"}, Options: []string{"ndots:2"}},
		Labels:       map[string]string{"io.skiff.managed": "true", "io.kubernetes.pod.uid": "uid1"},
		Annotations:  map[string]string{"note": "integration"},
	}
	sbID, err := r.RunSandbox(ctx, sb)
	if err != nil {
		t.Fatalf("RunSandbox: %v\ncontainerd log:\n%s", err, supervisor.LogTail(m.cfg.LogFile, 30))
	}
	st, err := r.SandboxStatus(ctx, sbID)
	if err != nil {
		t.Fatal(err)
	}
	_, cidr, _ := net.ParseCIDR(podCIDR)
	if st.State != runtime.SandboxReady || st.HostNetwork || !cidr.Contains(net.ParseIP(st.IP)) {
		t.Fatalf("sandbox status = %+v; want Ready with an IP in %s", st, podCIDR)
	}
	t.Logf("pod IP %s", st.IP)

	ctrSpec := &runtime.ContainerSpec{
		Name: "app", Image: busybox,
		Command: []string{"sh", "-c", "echo hi; echo oops >&2; sleep 1000"},
		Env:     []runtime.KeyValue{{Key: "GREETING", Value: "hello"}},
		LogPath: "app/0.log",
		Labels:  map[string]string{"io.skiff.managed": "true", "io.kubernetes.container.name": "app"},
	}
	ctrID, err := r.CreateContainer(ctx, sbID, ctrSpec, sb)
	if err != nil {
		t.Fatalf("CreateContainer: %v\ncontainerd log:\n%s", err, supervisor.LogTail(m.cfg.LogFile, 30))
	}
	if err := r.StartContainer(ctx, ctrID); err != nil {
		t.Fatalf("StartContainer: %v\ncontainerd log:\n%s", err, supervisor.LogTail(m.cfg.LogFile, 30))
	}
	cs, err := r.ContainerStatus(ctx, ctrID)
	if err != nil {
		t.Fatal(err)
	}
	// CRI's status carries no sandbox ID (runtime.Runtime.ContainerStatus);
	// the listing below checks it.
	if cs.State != runtime.ContainerRunning || cs.StartedAt.IsZero() || !cs.FinishedAt.IsZero() ||
		cs.LogPath != filepath.Join(podLogs, "app/0.log") || cs.ImageRef == "" {
		t.Fatalf("container status = %+v", cs)
	}

	execOut := func(cmd ...string) string {
		t.Helper()
		res, err := r.ExecSync(ctx, ctrID, cmd, 10*time.Second)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("ExecSync %v = %+v, %v", cmd, res, err)
		}
		return string(res.Stdout)
	}
	if out := execOut("echo", "x"); out != "x\n" {
		t.Fatalf("exec echo x: stdout %q", out)
	}
	if res, err := r.ExecSync(ctx, ctrID, []string{"sh", "-c", "exit 3"}, 0); err != nil || res.ExitCode != 3 {
		t.Fatalf("exec exit 3 = %+v, %v; want exit code 3 and no error", res, err)
	}
	if out := execOut("hostname"); out != "web\n" {
		t.Errorf("hostname = %q, want web", out)
	}
	if out := execOut("cat", "/etc/resolv.conf"); !strings.Contains(out, "nameserver 10.255.255.53") || !strings.Contains(out, "search example.test") {
		t.Errorf("resolv.conf = %q", out)
	}
	if out := execOut("sh", "-c", "echo $GREETING"); out != "hello\n" {
		t.Errorf("env GREETING = %q", out)
	}
	if out := execOut("ip", "-4", "addr", "show", "eth0"); !strings.Contains(out, st.IP+"/") {
		t.Errorf("eth0 in the pod lacks the pod IP %s:\n%s", st.IP, out)
	}
	// A second container serves HTTP on 8080: reachable from the node over
	// the bridge, from the first container over the shared localhost, and
	// through the host port (CNI portmap).
	webID, err := r.CreateContainer(ctx, sbID, &runtime.ContainerSpec{
		Name: "web", Image: busybox, LogPath: "web/0.log",
		Labels:  map[string]string{"io.skiff.managed": "true"},
		Command: []string{"sh", "-c", "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"},
	}, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, webID); err != nil {
		t.Fatal(err)
	}
	waitHTTP(ctx, t, "http://"+net.JoinHostPort(st.IP, "8080")+"/")
	if out := execOut("wget", "-qO-", "http://127.0.0.1:8080/"); out != "ok\n" {
		t.Errorf("wget localhost:8080 in the pod = %q", out)
	}
	nodeIPs, err := network.NodeIPs()
	if err != nil {
		t.Fatal(err)
	}
	waitHTTP(ctx, t, "http://"+net.JoinHostPort(nodeIPs[0].String(), "18080")+"/")

	waitLog(ctx, t, cs.LogPath, regexp.MustCompile(`(?m)^\S+ stdout F hi$`))
	waitLog(ctx, t, cs.LogPath, regexp.MustCompile(`(?m)^\S+ stderr F oops$`))

	ctrs, err := r.ListContainers(ctx, runtime.ContainerFilter{Labels: map[string]string{"io.skiff.managed": "true"}, SandboxID: sbID})
	if err != nil || len(ctrs) != 2 {
		t.Fatalf("ListContainers = %v, %v", ctrs, err)
	}
	for _, c := range ctrs {
		if c.SandboxID != sbID {
			t.Errorf("container %s lists sandbox %q, want %s", c.ID, c.SandboxID, sbID)
		}
	}
	sbs, err := r.ListSandboxes(ctx, map[string]string{"io.kubernetes.pod.uid": "uid1"})
	if err != nil || len(sbs) != 1 || sbs[0].ID != sbID || sbs[0].Name != "web" {
		t.Fatalf("ListSandboxes = %v, %v", sbs, err)
	}

	// Containers survive a containerd restart.
	stopCtx, stopCancel := context.WithTimeout(ctx, 20*time.Second)
	if err := m.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	stopCancel()
	r.Close()
	m2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m = m2
	r2, err := cri.New(ctx, m.Endpoint(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r = r2
	if cs, err := r.ContainerStatus(ctx, ctrID); err != nil || cs.State != runtime.ContainerRunning {
		t.Fatalf("after containerd restart: container status = %+v, %v", cs, err)
	}

	// Exit reports: the container's own exit, never its exec'd processes.
	ew, err := NewExitWatcher(m.Address(), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer ew.Close()
	type report struct {
		id string
		at time.Time
	}
	exits := make(chan report, 16)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() { _ = ew.WatchExits(wctx, func(id string) { exits <- report{id, time.Now()} }) }()
	time.Sleep(200 * time.Millisecond) // let the subscription reach containerd
	execOut("sh", "-c", ":")
	time.Sleep(200 * time.Millisecond) // an exec's exit, were it reported, would arrive now

	// kill -9 of containerd: the supervisor restarts it; the container, the
	// CRI client, the importer's client and the exit events carry on.
	oldPid := m.Pid()
	if err := syscall.Kill(oldPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for m.Restarts() < 1 {
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("containerd not restarted 20 s after kill -9; log:\n%s", supervisor.LogTail(m.cfg.LogFile, 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m.Pid() == oldPid {
		t.Fatalf("restarted containerd has the old pid %d", oldPid)
	}
	for {
		cs, err := r.ContainerStatus(ctx, ctrID)
		if err == nil && cs.State == runtime.ContainerRunning {
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("after kill -9 and restart: container status = %+v, %v", cs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ok, err := imp.HasImage(ctx, busybox); err != nil || !ok {
		t.Fatalf("importer after containerd restart: HasImage = %v, %v", ok, err)
	}
	select {
	case rep := <-exits:
		if rep.id != "" {
			t.Fatalf("first report after containerd restart: %q, want \"\" (relist)", rep.id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exit watcher did not resubscribe after the containerd restart")
	}
	t.Logf("containerd restarted and answering %v after kill -9", time.Since(killed).Round(time.Millisecond))

	// sh as PID 1 ignores SIGTERM: the stop escalates to SIGKILL.
	start := time.Now()
	if err := r.StopContainer(ctx, ctrID, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case rep := <-exits:
		if rep.id != ctrID || rep.at.Before(start) {
			t.Errorf("first exit reported: %s at %v, want the container %s after its stop at %v (an exec's exit is not the container's)",
				rep.id, rep.at, ctrID, start)
		}
	case <-time.After(10 * time.Second):
		t.Error("no exit reported for the stopped container")
	}
	t.Logf("StopContainer took %v", time.Since(start))
	cs, err = r.ContainerStatus(ctx, ctrID)
	if err != nil || cs.State != runtime.ContainerExited || cs.ExitCode != 137 || cs.FinishedAt.IsZero() {
		t.Fatalf("stopped container status = %+v, %v", cs, err)
	}
	if err := r.StopContainer(ctx, ctrID, time.Second); err != nil {
		t.Fatalf("second StopContainer: %v", err)
	}
	if err := r.StopSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveSandbox(ctx, sbID); err != nil {
		t.Fatalf("second RemoveSandbox: %v", err)
	}
	if _, err := r.SandboxStatus(ctx, sbID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("SandboxStatus after remove: %v, want ErrNotFound", err)
	}
	if _, err := r.ContainerStatus(ctx, ctrID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("ContainerStatus after sandbox remove: %v, want ErrNotFound", err)
	}

	// A host-network pod.
	hsb := &runtime.SandboxSpec{
		Name: "host", Namespace: "default", UID: "uid2", HostNetwork: true,
		LogDirectory: filepath.Join(root, "logs", "default_host_uid2"),
		Labels:       map[string]string{"io.skiff.managed": "true"},
	}
	hID, err := r.RunSandbox(ctx, hsb)
	if err != nil {
		t.Fatalf("RunSandbox hostNetwork: %v", err)
	}
	hst, err := r.SandboxStatus(ctx, hID)
	if err != nil || !hst.HostNetwork || hst.State != runtime.SandboxReady {
		t.Fatalf("host sandbox status = %+v, %v", hst, err)
	}
	hc, err := r.CreateContainer(ctx, hID, &runtime.ContainerSpec{
		Name: "h", Image: busybox, Command: []string{"sleep", "1000"}, LogPath: "h/0.log",
	}, hsb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, hc); err != nil {
		t.Fatal(err)
	}
	res, err := r.ExecSync(ctx, hc, []string{"ls", "/sys/class/net"}, 10*time.Second)
	if err != nil || !bytes.Contains(res.Stdout, []byte("skt0")) {
		t.Fatalf("host-network container should see the node's skt0 bridge: %+v, %v", res, err)
	}
	if err := r.RemoveSandbox(ctx, hID); err != nil {
		t.Fatal(err)
	}

	// A second Start on the same root replaces the running containerd.
	m3, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("first containerd still running after takeover")
	}
	stopCtx, stopCancel = context.WithTimeout(ctx, 20*time.Second)
	defer stopCancel()
	if err := m3.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if err := m3.Stop(stopCtx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func waitHTTP(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && string(body) == "ok\n" {
				return
			}
			err = fmt.Errorf("status %d, body %q", resp.StatusCode, body)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitImage(ctx context.Context, t *testing.T, r *cri.Runtime, ref string) {
	t.Helper()
	// The CRI plugin learns about imported images from containerd events.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.ImageStatus(ctx, ref)
		if err == nil {
			return
		}
		if !errors.Is(err, runtime.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("ImageStatus %s: %v", ref, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitLog(ctx context.Context, t *testing.T, path string, re *regexp.Regexp) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if re.Match(b) {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("log %s does not match %s:\n%s", path, re, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
