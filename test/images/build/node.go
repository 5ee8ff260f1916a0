package main

import (
	"context"
	"fmt"
	"os"

	"github.com/skiffnode/skiff/internal/imagebuild"
	"github.com/skiffnode/skiff/test/vm"
)

// The node image's paths; docs/node-image.md documents them.
const (
	nodeManifestDir = "/etc/skiff/manifests"
	nodeRootDir     = "/var/lib/skiff"
	nodePodLogsDir  = "/var/log/pods"
	nodeSkiff       = "/usr/bin/skiff"
	// nodeRuntimeDir holds skiff's own containerd, shim and runc: skiff
	// looks in <its directory>/../lib/skiff.
	nodeRuntimeDir = "/usr/lib/skiff"
)

// nodeOptions say what goes into the node image.
type nodeOptions struct {
	out, ref          string
	skiff, skiffPause string
	// runtimeDir holds skiff's own runtime (make runtime: bin/).
	runtimeDir string
}

// nodeImage assembles the node image: skiff and skiff-pause, skiff's own
// containerd, runc shim and runc (o.runtimeDir, at nodeRuntimeDir), and from
// the host busybox, the CNI plugins skiff's conflist uses and iptables with
// their shared libraries (the same assembly as the cgroup v2 VM's root,
// test/vm). Its entrypoint is `skiff agent` with the managed containerd.
func nodeImage(ctx context.Context, o nodeOptions) (image, error) {
	for _, p := range []string{o.skiff, o.skiffPause} {
		if _, err := os.Stat(p); err != nil {
			return image{}, fmt.Errorf("node image: %w (make build)", err)
		}
	}
	r := vm.NewRootfs()
	if err := vm.AddBundledRuntime(ctx, r, nodeRuntimeDir, o.runtimeDir); err != nil {
		return image{}, fmt.Errorf("node image: %w", err)
	}
	if err := vm.AddNodeRuntime(ctx, r, vm.NodeCNIPlugins); err != nil {
		return image{}, fmt.Errorf("node image: %w", err)
	}
	// skiff finds skiff-pause beside its own executable.
	if err := r.AddExecutable(ctx, nodeSkiff, o.skiff); err != nil {
		return image{}, fmt.Errorf("node image: %w", err)
	}
	if err := r.AddExecutable(ctx, nodeSkiff+"-pause", o.skiffPause); err != nil {
		return image{}, fmt.Errorf("node image: %w", err)
	}
	if err := addNodeEtc(r); err != nil {
		return image{}, fmt.Errorf("node image: %w", err)
	}
	for _, d := range []string{nodeManifestDir, nodeRootDir, nodePodLogsDir} {
		r.AddDir(d, 0o755)
	}
	return image{ref: o.ref, files: r.ImageFiles(), cfg: nodeConfig()}, nil
}

// addNodeEtc writes the users and groups and copies the name databases
// iptables reads. The runtime provides /etc/hosts, /etc/hostname and
// /etc/resolv.conf (which the inner pods inherit).
func addNodeEtc(r *vm.Rootfs) error {
	if err := r.AddBytes("/etc/passwd", []byte(passwd), 0o644); err != nil {
		return err
	}
	if err := r.AddBytes("/etc/group", []byte(group), 0o644); err != nil {
		return err
	}
	if err := r.AddBytes("/etc/nsswitch.conf", []byte("hosts: files dns\n"), 0o644); err != nil {
		return err
	}
	for _, name := range []string{"/etc/protocols", "/etc/services", "/etc/ethertypes"} {
		if _, err := os.Stat(name); err == nil {
			if err := r.AddFile(name, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodeConfig runs `skiff agent` on the mounted manifest directory; the
// arguments (Cmd) can be replaced, the entrypoint stays.
func nodeConfig() imagebuild.Config {
	return imagebuild.Config{
		Entrypoint: []string{nodeSkiff, "agent"},
		Cmd: []string{
			"--pod-manifest-path=" + nodeManifestDir,
			"--root-dir=" + nodeRootDir,
			"--pod-logs-dir=" + nodePodLogsDir,
		},
		Env: []string{defaultPath},
	}
}
