// Package extcd describes the benchmark's external containerd (issue 13):
// a containerd the harness starts itself with a plain CRI configuration, as
// a kubelet user has it (runc v2 with cgroupfs, a CNI bridge + portmap +
// loopback conflist, a pause image built from a Go pause binary), for skiff
// and the kubelet to dial with --container-runtime-endpoint. Everything it
// writes lives under one directory. The renderers are pure; WriteFiles and
// WritePauseArchive do the I/O.
package extcd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffnode/skiff/runtime"
)

// Defaults of Config.
const (
	DefaultBinary    = "/usr/bin/containerd"
	DefaultCNIBinDir = "/usr/lib/cni"
	// DefaultBridge and DefaultSubnet stay apart from skiff's managed
	// network (skiff0, 10.88.0.0/16), which may exist beside it.
	DefaultBridge  = "cni-ext0"
	DefaultSubnet  = "10.89.0.0/16"
	networkName    = "bench-ext"
	conflistName   = "10-bench-ext.conflist"
	cniVersion     = "1.0.0"
	pauseRepo      = "bench.local/pause-go"
	maxSocketBytes = 107 - len(".ttrpc") // sun_path less NUL and containerd's ttrpc suffix
)

// Config is one external containerd.
type Config struct {
	// Dir holds its config, root, state, socket, CNI config and log; keep
	// it short (the socket is Dir/containerd.sock).
	Dir string
	// Binary is the containerd executable (default DefaultBinary).
	Binary string
	// CNIBinDir holds the CNI plugins (default DefaultCNIBinDir).
	CNIBinDir string
	// Bridge and Subnet are the CNI bridge's (defaults above).
	Bridge, Subnet string
	// SandboxImage is the pause image reference (WritePauseArchive).
	SandboxImage string
	// ShimGroups lists containerd's shim group annotation
	// (runtime.AnnotationShimGroup) in the runc runtime's pod_annotations, the one
	// line an operator adds for skiff's --pods-per-shim; the kubelet sends
	// no such annotation, so its pods keep one shim each.
	ShimGroups bool
}

// Paths are the files of a Config's containerd.
type Paths struct {
	Config, Root, State, Socket, CNIConfDir, IPAMDir, Log string
}

// WithDefaults fills in the defaults. Pure.
func (c Config) WithDefaults() Config {
	if c.Binary == "" {
		c.Binary = DefaultBinary
	}
	if c.CNIBinDir == "" {
		c.CNIBinDir = DefaultCNIBinDir
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.Subnet == "" {
		c.Subnet = DefaultSubnet
	}
	return c
}

// Paths returns the files under c.Dir. Pure.
func (c Config) Paths() Paths {
	return Paths{
		Config:     filepath.Join(c.Dir, "config.toml"),
		Root:       filepath.Join(c.Dir, "root"),
		State:      filepath.Join(c.Dir, "state"),
		Socket:     filepath.Join(c.Dir, "containerd.sock"),
		CNIConfDir: filepath.Join(c.Dir, "net.d"),
		IPAMDir:    filepath.Join(c.Dir, "ipam"),
		Log:        filepath.Join(c.Dir, "containerd.log"),
	}
}

// Validate fails for a config containerd could not run with.
func (c Config) Validate() error {
	if !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("external containerd: directory %q is not absolute", c.Dir)
	}
	if s := c.Paths().Socket; len(s) > maxSocketBytes {
		return fmt.Errorf("external containerd: socket path %s is longer than %d bytes; use a shorter -root", s, maxSocketBytes)
	}
	if c.SandboxImage == "" {
		return fmt.Errorf("external containerd: no sandbox image")
	}
	if len(c.Bridge) > 15 {
		return fmt.Errorf("external containerd: bridge name %q is longer than 15 bytes", c.Bridge)
	}
	for _, s := range []string{c.Dir, c.Binary, c.CNIBinDir, c.SandboxImage} {
		if strings.ContainsAny(s, "\"\\\n\r\t") {
			return fmt.Errorf("external containerd: %q has a character the TOML config cannot hold unquoted", s)
		}
	}
	return nil
}

// RenderConfig returns config.toml (version 2, containerd 1.6): the CRI
// plugin with runc v2 and cgroupfs (and the shim group annotation passed
// through with ShimGroups), restrict_oom_score_adj (the harness
// may lack CAP_SYS_RESOURCE), sandbox_image and the CNI directories. c must
// have its defaults. Pure.
func RenderConfig(c Config) string {
	p := c.Paths()
	const cri = `plugins."io.containerd.grpc.v1.cri"`
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by skiffbench: the external containerd of the benchmark.\n")
	fmt.Fprintf(&b, "version = 2\nroot = %q\nstate = %q\noom_score = 0\n\n", p.Root, p.State)
	fmt.Fprintf(&b, "[grpc]\n  address = %q\n\n", p.Socket)
	// Without this the opt plugin creates /opt/containerd.
	fmt.Fprintf(&b, "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %q\n\n", filepath.Join(c.Dir, "opt"))
	fmt.Fprintf(&b, "[%s]\n  sandbox_image = %q\n  restrict_oom_score_adj = true\n", cri, c.SandboxImage)
	fmt.Fprintf(&b, "[%s.containerd]\n  snapshotter = \"overlayfs\"\n  default_runtime_name = \"runc\"\n", cri)
	fmt.Fprintf(&b, "[%s.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n", cri)
	if c.ShimGroups {
		fmt.Fprintf(&b, "  pod_annotations = [%q]\n", runtime.AnnotationShimGroup)
	}
	fmt.Fprintf(&b, "[%s.containerd.runtimes.runc.options]\n  SystemdCgroup = false\n", cri)
	fmt.Fprintf(&b, "[%s.cni]\n  bin_dir = %q\n  conf_dir = %q\n  max_conf_num = 1\n", cri, c.CNIBinDir, p.CNIConfDir)
	return b.String()
}

// Conflist returns the CNI network: bridge (isGateway, no masquerade: the
// benchmark's pods never leave the node) with host-local IPAM, portmap and
// loopback. c must have its defaults. Pure.
func Conflist(c Config) ([]byte, error) {
	list := map[string]any{
		"cniVersion": cniVersion,
		"name":       networkName,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": c.Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": c.Subnet}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": c.Paths().IPAMDir,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
			map[string]any{"type": "loopback"},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode conflist: %w", err)
	}
	return append(b, '\n'), nil
}

// Summary describes c in one line for the report. Pure.
func Summary(c Config) string {
	groups := ""
	if c.ShimGroups {
		groups = fmt.Sprintf(", pod_annotations = [%q] (skiff's --pods-per-shim; the kubelet sends no such annotation)", runtime.AnnotationShimGroup)
	}
	return fmt.Sprintf("%s, started by the harness with a plain CRI config: runc v2 (cgroupfs, SystemdCgroup = false%s), "+
		"restrict_oom_score_adj = true, overlayfs, sandbox_image %s (a Go pause binary, skiff-pause), "+
		"CNI %s: bridge %s %s (host-local IPAM, isGateway, no ipMasq) + portmap + loopback from %s.",
		c.Binary, groups, c.SandboxImage, conflistName, c.Bridge, c.Subnet, c.CNIBinDir)
}

// WriteFiles creates c.Dir and writes config.toml and the conflist.
// Idempotent.
func WriteFiles(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	p := c.Paths()
	if err := os.MkdirAll(p.CNIConfDir, 0o755); err != nil {
		return fmt.Errorf("external containerd dirs: %w", err)
	}
	if err := os.WriteFile(p.Config, []byte(RenderConfig(c)), 0o644); err != nil {
		return fmt.Errorf("external containerd config: %w", err)
	}
	cl, err := Conflist(c)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.CNIConfDir, conflistName), cl, 0o644); err != nil {
		return fmt.Errorf("external containerd CNI config: %w", err)
	}
	return nil
}

// PauseRef is the pause image reference of the executable exe:
// bench.local/pause-go:<first 12 hex digits of its SHA-256>. Pure.
func PauseRef(exe []byte) string {
	sum := sha256.Sum256(exe)
	return pauseRepo + ":" + hex.EncodeToString(sum[:])[:12]
}
