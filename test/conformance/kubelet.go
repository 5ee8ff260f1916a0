package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffnode/skiff/internal/registries"
	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/runtime/containerd"
	"github.com/skiffnode/skiff/runtime/cri"
	"github.com/skiffnode/skiff/test/cluster"
)

// The upstream kubelet as the node (-node kubelet): the same control plane,
// registry and suite, for the side-by-side pass rate (issue 32). It runs on
// the containerd skiff would manage (skiff's bundled containerd, runc shim
// and runc, the config runtime/containerd writes, skiff's CNI bridge), so
// that the two runs differ in the node agent only.

// kubeletArgs are the kubelet's flags in this harness: its defaults where
// the machine allows them. cgroup v1 needs --fail-cgroupv1=false since
// 1.35; this machine has no systemd (cgroupfs); its disk has less than the
// default nodefs.available (10 %) free, which would taint the node
// DiskPressure, and skiff has no disk eviction, so hard eviction is off.
// The kubelet API is shut as skiff's (issue 29): client certificates of
// the cluster CA, tokens through TokenReview, Webhook authorization.
func kubeletArgs(c *cluster.Cluster, root, endpoint string) []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig(nodeName),
		"--container-runtime-endpoint=" + endpoint,
		"--root-dir=" + filepath.Join(root, "kubelet"),
		"--pod-manifest-path=" + filepath.Join(root, "manifests"),
		"--hostname-override=" + nodeName,
		"--fail-cgroupv1=false",
		"--fail-swap-on=false",
		"--cgroup-driver=cgroupfs",
		"--eviction-hard=",
		"--serialize-image-pulls=false",
		"--anonymous-auth=false",
		"--client-ca-file=" + c.CAFile(),
		"--authentication-token-webhook",
		"--authorization-mode=Webhook",
		"--v=2",
	}
}

// kubeletNode is the kubelet and the containerd it runs on.
type kubeletNode struct {
	proc *agentProc
	rt   *containerd.Managed
}

// startKubelet starts containerd under root (the runtime beside o.skiff,
// make runtime), imports the pause image, and starts the kubelet o.kubelet
// on it, its output into out/agent.log. On error nothing is left running.
func startKubelet(ctx context.Context, o options, c *cluster.Cluster, root, regFile string) (_ *kubeletNode, retErr error) {
	bin, err := copyAgent(o.skiff, filepath.Join(root, "bin"))
	if err != nil {
		return nil, err
	}
	rt, err := startRuntime(ctx, o, root, filepath.Dir(bin), regFile)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			stopRuntime(rt)
		}
	}()
	for _, d := range []string{filepath.Join(root, "kubelet"), filepath.Join(root, "manifests")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	logFile, err := os.Create(filepath.Join(o.out, "agent.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := kubeletArgs(c, root, rt.Endpoint())
	if o.addons {
		args = append(args, "--cluster-dns="+dnsServiceIP, "--cluster-domain="+clusterDomain)
	}
	args = append(args, strings.Fields(o.agentArgs)...)
	cmd := exec.Command(o.kubelet, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("start kubelet: %w", err)
	}
	logf("kubelet started: %s %s", o.kubelet, strings.Join(args, " "))
	return &kubeletNode{proc: p, rt: rt}, nil
}

// startRuntime starts containerd from binDir under root as skiff's managed
// mode configures it: the registry file's mirrors, skiff's CNI bridge, the
// pause image built from o.pause.
func startRuntime(ctx context.Context, o options, root, binDir, regFile string) (_ *containerd.Managed, retErr error) {
	f, err := registries.Load(regFile)
	if err != nil {
		return nil, err
	}
	rendered := f.Render()
	pauseRef, err := containerd.PauseImageRef(o.pause)
	if err != nil {
		return nil, err
	}
	cniDir := filepath.Join(root, "cni", "net.d")
	if _, err := network.WriteBridgeConflist(cniDir, network.BridgeConfig{}); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := containerd.Start(ctx, containerd.Config{
		RootDir: root, Binary: filepath.Join(binDir, "containerd"), BinDir: binDir,
		CNIConfDir: cniDir, SandboxImage: pauseRef, RegistryHosts: rendered.Hosts,
		Ready: cri.Ping, Logger: log, LogFile: filepath.Join(o.out, "containerd.log"),
	})
	if err != nil {
		return nil, fmt.Errorf("containerd for the kubelet: %w", err)
	}
	defer func() {
		if retErr != nil {
			stopRuntime(rt)
		}
	}()
	imp, err := containerd.NewImporter(rt.Address())
	if err != nil {
		return nil, err
	}
	defer imp.Close()
	if _, err := containerd.EnsurePauseImage(ctx, imp, o.pause, filepath.Join(root, "cache")); err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	logf("containerd %s for the kubelet at %s, sandbox image %s", rt.Endpoint(), root, pauseRef)
	return rt, nil
}

// stopRuntime stops the kubelet's containerd (its supervisor would restart
// it if it were only killed).
func stopRuntime(rt *containerd.Managed) {
	if rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logf("stopping containerd: %v", err)
	}
}
