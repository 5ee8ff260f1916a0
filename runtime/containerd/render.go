package containerd

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skiffnode/skiff/runtime"
)

// disabledPluginsV2 are containerd 1.x plugins a node does not need:
// snapshotters other than overlayfs need special filesystems or devices and
// only log errors here.
var disabledPluginsV2 = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.devmapper",
}

// disabledPluginsV3 are containerd 2.x plugins a node does not need: the
// snapshotters and differs other than overlayfs/native and walking (btrfs,
// zfs and devmapper are not even built into skiff's containerd), tracing,
// NRI (the CRI plugin runs without it) and the image verifier, which reads
// /opt/containerd.
var disabledPluginsV3 = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.snapshotter.v1.erofs",
	"io.containerd.snapshotter.v1.blockfile",
	"io.containerd.differ.v1.erofs",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.internal.v1.tracing",
	"io.containerd.nri.v1.nri",
	"io.containerd.image-verifier.v1.bindir",
}

// renderConfig returns config.toml for cfg, which must have its defaults
// filled in, in the newest schema its containerd (cfg.Version) reads
// without migrating it: version 4 from containerd 2.3, 3 for 2.0 to 2.2,
// 2 for 1.x.
func renderConfig(cfg Config) (string, error) {
	for _, s := range []string{cfg.RootDir, cfg.CNIBinDir, cfg.CNIConfDir, cfg.SandboxImage, cfg.BinDir} {
		if hasControl(s) {
			return "", fmt.Errorf("containerd config: control character in %q", s)
		}
	}
	major, minor, err := parseVersion(cfg.Version)
	if err != nil {
		return "", fmt.Errorf("containerd config: %w", err)
	}
	var b strings.Builder
	switch {
	case major > 2 || major == 2 && minor >= 3:
		err = renderV3(&b, cfg, 4)
	case major == 2:
		err = renderV3(&b, cfg, 3)
	default:
		err = renderV2(&b, cfg)
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// renderHeader writes the top-level keys: the servers' sockets are
// top-level tables up to version 3 and plugins from version 4, where the
// ttrpc socket must be named (its default is the host containerd's).
func renderHeader(b *strings.Builder, version int, p paths, disabled []string) {
	fmt.Fprintf(b, "# Written by skiff; changes are overwritten on start.\n")
	fmt.Fprintf(b, "version = %d\n", version)
	fmt.Fprintf(b, "root = %s\n", tomlString(p.root))
	fmt.Fprintf(b, "state = %s\n", tomlString(p.state))
	// 0: do not touch containerd's own oom_score_adj (lowering it needs
	// CAP_SYS_RESOURCE).
	fmt.Fprintf(b, "oom_score = 0\n")
	fmt.Fprintf(b, "disabled_plugins = [")
	for i, name := range disabled {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(name))
	}
	b.WriteString("]\n\n")
	if version >= 4 {
		fmt.Fprintf(b, "[plugins.\"io.containerd.server.v1.grpc\"]\n  address = %s\n", tomlString(p.socket))
		fmt.Fprintf(b, "[plugins.\"io.containerd.server.v1.ttrpc\"]\n  address = %s\n\n", tomlString(p.socket+".ttrpc"))
	} else {
		fmt.Fprintf(b, "[grpc]\n  address = %s\n\n", tomlString(p.socket))
	}
	// The opt plugin would otherwise create /opt/containerd.
	fmt.Fprintf(b, "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %s\n\n", tomlString(p.opt))
}

// renderRuncOptions writes the runc runtime's options table: the cgroup
// driver must be skiff's (--cgroup-driver); BinDir's runc when set.
func renderRuncOptions(b *strings.Builder, table string, cfg Config) {
	fmt.Fprintf(b, "[%s]\n", table)
	fmt.Fprintf(b, "  SystemdCgroup = %t\n", cfg.SystemdCgroup)
	if cfg.BinDir != "" {
		fmt.Fprintf(b, "  BinaryName = %s\n", tomlString(filepath.Join(cfg.BinDir, "runc")))
	}
}

// renderPodAnnotations writes the runc runtime's pod_annotations: the
// shim group when cfg.ShimGroups, else nothing (no pod annotation reaches
// the specs, as in containerd's default).
func renderPodAnnotations(b *strings.Builder, cfg Config) {
	if cfg.ShimGroups {
		fmt.Fprintf(b, "  pod_annotations = [%s]\n", tomlString(runtime.AnnotationShimGroup))
	}
}

// renderV2 writes config version 2, as containerd 1.6 and 1.7 read it.
func renderV2(b *strings.Builder, cfg Config) error {
	p := pathsFor(cfg.RootDir)
	q := tomlString
	renderHeader(b, 2, p, disabledPluginsV2)
	const cri = `plugins."io.containerd.grpc.v1.cri"`
	fmt.Fprintf(b, "[%s]\n", cri)
	fmt.Fprintf(b, "  sandbox_image = %s\n", q(cfg.SandboxImage))
	fmt.Fprintf(b, "  restrict_oom_score_adj = %t\n", *cfg.RestrictOOMScoreAdj)
	fmt.Fprintf(b, "[%s.containerd]\n", cri)
	fmt.Fprintf(b, "  snapshotter = %s\n", q(DefaultSnapshotter))
	fmt.Fprintf(b, "  default_runtime_name = \"runc\"\n")
	fmt.Fprintf(b, "[%s.containerd.runtimes.runc]\n", cri)
	fmt.Fprintf(b, "  runtime_type = \"io.containerd.runc.v2\"\n")
	renderPodAnnotations(b, cfg)
	renderRuncOptions(b, cri+".containerd.runtimes.runc.options", cfg)
	fmt.Fprintf(b, "[%s.cni]\n", cri)
	fmt.Fprintf(b, "  bin_dir = %s\n", q(cfg.CNIBinDir))
	fmt.Fprintf(b, "  conf_dir = %s\n", q(cfg.CNIConfDir))
	fmt.Fprintf(b, "  max_conf_num = 1\n")
	return renderRegistry(b, cri, p.certsD, cfg.RegistryAuths)
}

// renderV3 writes config version 3 or 4, as containerd 2.x reads it: the
// CRI plugin is split into its images and runtime halves
// (io.containerd.cri.v1.images, io.containerd.cri.v1.runtime), and the
// pause image is the images plugin's pinned "sandbox" image.
func renderV3(b *strings.Builder, cfg Config, version int) error {
	p := pathsFor(cfg.RootDir)
	q := tomlString
	renderHeader(b, version, p, disabledPluginsV3)
	const images = `plugins."io.containerd.cri.v1.images"`
	fmt.Fprintf(b, "[%s]\n", images)
	fmt.Fprintf(b, "  snapshotter = %s\n", q(DefaultSnapshotter))
	fmt.Fprintf(b, "[%s.pinned_images]\n", images)
	fmt.Fprintf(b, "  sandbox = %s\n", q(cfg.SandboxImage))
	if err := renderRegistry(b, images, p.certsD, cfg.RegistryAuths); err != nil {
		return err
	}
	const rt = `plugins."io.containerd.cri.v1.runtime"`
	fmt.Fprintf(b, "[%s]\n", rt)
	fmt.Fprintf(b, "  restrict_oom_score_adj = %t\n", *cfg.RestrictOOMScoreAdj)
	fmt.Fprintf(b, "[%s.containerd]\n", rt)
	fmt.Fprintf(b, "  default_runtime_name = \"runc\"\n")
	fmt.Fprintf(b, "[%s.containerd.runtimes.runc]\n", rt)
	fmt.Fprintf(b, "  runtime_type = \"io.containerd.runc.v2\"\n")
	renderPodAnnotations(b, cfg)
	renderRuncOptions(b, rt+".containerd.runtimes.runc.options", cfg)
	fmt.Fprintf(b, "[%s.cni]\n", rt)
	fmt.Fprintf(b, "  bin_dirs = [%s]\n", q(cfg.CNIBinDir))
	fmt.Fprintf(b, "  conf_dir = %s\n", q(cfg.CNIConfDir))
	fmt.Fprintf(b, "  max_conf_num = 1\n")
	return nil
}
