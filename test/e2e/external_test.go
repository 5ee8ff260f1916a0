package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffnode/skiff/internal/pause"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/runtime/containerd"
	"github.com/skiffnode/skiff/runtime/cri"
)

// The suite's runtime modes, chosen by SKIFF_E2E_RUNTIME.
const (
	// runtimeManaged (the default, also "") lets every agent start its
	// managed containerd under the suite's root.
	runtimeManaged = "managed"
	// runtimeExternal makes the suite start one containerd itself
	// (SKIFF_E2E_CONTAINERD, default containerd from PATH: Debian's 1.6)
	// and give every agent --container-runtime-endpoint, as a node with a
	// runtime of its own runs skiff (make e2e-external).
	runtimeExternal = "external"
)

// runtimeMode reads SKIFF_E2E_RUNTIME: runtimeManaged or runtimeExternal.
func runtimeMode() (string, error) {
	switch m := os.Getenv("SKIFF_E2E_RUNTIME"); m {
	case "", runtimeManaged:
		return runtimeManaged, nil
	case runtimeExternal:
		return runtimeExternal, nil
	default:
		return "", fmt.Errorf("SKIFF_E2E_RUNTIME=%q: want %q or %q", m, runtimeManaged, runtimeExternal)
	}
}

// externalRuntime is the containerd the suite runs in external mode. It is
// started through runtime/containerd (the code of skiff's managed mode), so
// its config is the one skiff writes for that version: for containerd 1.x
// config version 2 with runc v2, cgroupfs, overlayfs and the CNI bridge
// conflist below. Everything lives under <suite root>/ext; skiff only dials
// its socket and imports nothing into it, so the suite imports the pause
// image and the test images.
type externalRuntime struct {
	m *containerd.Managed
	// binary is the containerd executable, version its version as
	// `containerd --version` prints it ("1.6.20~ds1").
	binary, version string
	// killed counts the restarts a test caused on purpose (the faults
	// suite's kill -9); stop reports only the others.
	killed atomic.Int64
}

// externalDir is the external containerd's directory under the suite root.
func externalDir(root string) string { return filepath.Join(root, "ext") }

// startExternal starts the external containerd under root/ext, with skiff's
// bridge conflist (network.WriteBridgeConflist, as a managed skiff writes
// it) and skiff's pause image as its sandbox image, then imports the pause
// image and every archive in root/images into its k8s.io namespace. bin is
// the skiff under test: its skiff-pause is the pause executable where skiff
// has no built-in one. On error nothing is left running.
func startExternal(ctx context.Context, root, bin string) (_ *externalRuntime, retErr error) {
	binary := os.Getenv("SKIFF_E2E_CONTAINERD")
	if binary == "" {
		p, err := exec.LookPath("containerd")
		if err != nil {
			return nil, fmt.Errorf("external runtime: no containerd on PATH (set SKIFF_E2E_CONTAINERD): %w", err)
		}
		binary = p
	}
	version, err := containerd.BinaryVersion(ctx, binary)
	if err != nil {
		return nil, fmt.Errorf("external runtime: %w", err)
	}
	exe, builtin := pause.Executable(goruntime.GOARCH)
	pauseRef := containerd.PauseImageRefData(exe)
	pauseBin := filepath.Join(filepath.Dir(bin), "skiff-pause")
	if !builtin {
		if pauseRef, err = containerd.PauseImageRef(pauseBin); err != nil {
			return nil, fmt.Errorf("external runtime: %w", err)
		}
	}
	dir := externalDir(root)
	cniDir := filepath.Join(dir, "net.d")
	if _, err := network.WriteBridgeConflist(cniDir, network.BridgeConfig{}); err != nil {
		return nil, fmt.Errorf("external runtime: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// BinDir: the shim and runc beside containerd come first on its PATH,
	// as skiff's managed mode does (bin/ holds containerd 2's own).
	m, err := containerd.Start(ctx, containerd.Config{
		RootDir: dir, Binary: binary, BinDir: filepath.Dir(binary), Version: version, CNIConfDir: cniDir,
		SandboxImage: pauseRef, Ready: cri.Ping, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("external runtime: start %s: %w", binary, err)
	}
	x := &externalRuntime{m: m, binary: binary, version: version}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, x.stop())
		}
	}()
	imp, err := containerd.NewImporter(m.Address())
	if err != nil {
		return nil, fmt.Errorf("external runtime: %w", err)
	}
	defer imp.Close()
	cache := filepath.Join(dir, "cache")
	if builtin {
		_, err = containerd.EnsurePauseImageData(ctx, imp, exe, cache)
	} else {
		_, err = containerd.EnsurePauseImage(ctx, imp, pauseBin, cache)
	}
	if err != nil {
		return nil, fmt.Errorf("external runtime: %w", err)
	}
	names, err := imp.ImportDir(ctx, filepath.Join(root, "images"))
	if err != nil {
		return nil, fmt.Errorf("external runtime: import test images: %w", err)
	}
	fmt.Fprintf(os.Stderr, "e2e: external runtime %s (containerd %s) at %s, pause image %s, imported %v\n",
		binary, version, m.Endpoint(), pauseRef, names)
	return x, nil
}

// endpoint is the external containerd's CRI endpoint.
func (x *externalRuntime) endpoint() string { return x.m.Endpoint() }

// stop stops containerd (SIGTERM, SIGKILL after 30 s) and fails if it had
// to be restarted during the run: a crash of the runtime under test must
// not go unnoticed. The shims and mounts under the root are the suite
// teardown's. Idempotent.
func (x *externalRuntime) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := x.m.Stop(ctx)
	if n := x.m.Restarts() - int(x.killed.Load()); n > 0 {
		err = errors.Join(err, fmt.Errorf("external runtime %s exited %d times during the run (restarted; see %s)",
			x.binary, n, filepath.Join(filepath.Dir(x.m.Address()), "containerd.log")))
	}
	return err
}

// ExternalRuntime reports whether the suite runs skiff against an
// external containerd (SKIFF_E2E_RUNTIME=external, make e2e-external)
// rather than skiff's managed one.
func (e *Env) ExternalRuntime() bool { return e.s.external != nil }

// SkipOnExternalRuntime skips the test when the suite runs on the external
// runtime; why says what of managed mode the test needs.
func (e *Env) SkipOnExternalRuntime(t *testing.T, why string) {
	t.Helper()
	if e.ExternalRuntime() {
		t.Skip("needs skiff's managed containerd (external runtime mode): " + why)
	}
}

// TestAgentUsesTheSuitesRuntime_Issue31 checks the suite's runtime mode
// itself: in external mode the agent starts no managed containerd (no
// <root>/containerd) and its pod runs in the suite's containerd, whose CRI
// reports the external binary's version; in managed mode the agent's
// managed containerd under the root runs the pod.
func TestAgentUsesTheSuitesRuntime_Issue31(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "mode.yaml", sleeperPod("mode", false))
	e.WaitForPod(t, PodName("mode"), runningAndReady, podStartTimeout)
	sbs, err := e.CRI(t).ListSandboxes(t.Context(), nil)
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes in %s: %d (%v), want the pod's one", e.s.criEndpoint(), len(sbs), err)
	}
	_, statErr := os.Stat(filepath.Join(e.s.Root, "containerd", "config.toml"))
	if !e.ExternalRuntime() {
		if statErr != nil {
			t.Errorf("managed mode: no managed containerd config under the root: %v", statErr)
		}
		return
	}
	if statErr == nil {
		t.Errorf("external mode: the agent wrote a managed containerd config under the root")
	}
	v, err := e.CRI(t).Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "containerd" || v.Version != e.s.external.version {
		t.Errorf("external runtime reports %s %s, want containerd %s (%s)", v.Name, v.Version, e.s.external.version, e.s.external.binary)
	}
}

// TestRuntimeMode: SKIFF_E2E_RUNTIME selects the mode; unknown values fail.
// Pure (runs without SKIFF_E2E).
func TestRuntimeMode(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		wantErr   bool
	}{
		{"", runtimeManaged, false},
		{"managed", runtimeManaged, false},
		{"external", runtimeExternal, false},
		{"External", "", true},
		{"containerd", "", true},
	} {
		t.Setenv("SKIFF_E2E_RUNTIME", tc.env)
		got, err := runtimeMode()
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("SKIFF_E2E_RUNTIME=%q: %q, %v; want %q, error %t", tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}
