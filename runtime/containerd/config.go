// Package containerd runs skiff's managed containerd (the k3s model): skiff
// writes containerd's configuration under its own root directory, starts
// containerd as a child process and talks CRI to it through runtime/cri. It
// also imports image archives into containerd's "k8s.io" namespace, where
// the CRI plugin sees them, and builds the pause image from skiff's own
// executable, so nodes need no registry.
package containerd

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Defaults for Config.
const (
	DefaultBinary      = "containerd"
	DefaultCNIBinDir   = "/usr/lib/cni"
	DefaultSnapshotter = "overlayfs"
	// Namespace is the containerd namespace of the CRI plugin.
	Namespace = "k8s.io"
)

// Config configures the managed containerd.
type Config struct {
	// RootDir is skiff's root directory; containerd lives under
	// RootDir/containerd. Keep it short: the gRPC socket path
	// RootDir/containerd/containerd.sock must stay below 108 bytes.
	RootDir string
	// Binary is the containerd executable (default "containerd" from PATH).
	Binary string
	// BinDir, if set, holds the containerd-shim-runc-v2 and runc that this
	// containerd runs (skiff's own runtime, see FindBundled): it goes first
	// on containerd's PATH, and runc's path is set in the runc options.
	// Empty: containerd finds both on PATH.
	BinDir string
	// Version is containerd's version as `containerd --version` prints it
	// ("v2.4.2", "1.6.20~ds1"); empty: Start asks Binary (BinaryVersion).
	// It selects the config schema: version 2 for containerd 1.x, version 3
	// for 2.x.
	Version string
	// CNIBinDir holds the CNI plugins (default /usr/lib/cni).
	CNIBinDir string
	// CNIConfDir is where network.WriteBridgeConflist writes the conflist
	// (default RootDir/cni/net.d).
	CNIConfDir string
	// SandboxImage is the pause image reference (see PauseImageRef).
	SandboxImage string
	// RestrictOOMScoreAdj makes the CRI plugin clamp containers' OOM score
	// adjustments to its own instead of failing when it may not lower them.
	// nil: true when the process lacks CAP_SYS_RESOURCE.
	RestrictOOMScoreAdj *bool
	// Ready reports whether a CRI runtime serves at endpoint
	// ("unix:///.../containerd.sock"): nil when it answers. Start polls it
	// until containerd is ready. Required; the node passes its CRI client's
	// probe (runtime/cri.Ping), so that this package speaks no CRI itself.
	Ready func(ctx context.Context, endpoint string) error
	// Logger receives skiff's messages about containerd (default: discard).
	Logger *slog.Logger
	// LogFile receives containerd's stdout and stderr (default
	// RootDir/containerd/containerd.log).
	LogFile string
	// SystemdCgroup makes runc use the systemd cgroup driver; it must match
	// skiff's --cgroup-driver (false: cgroupfs).
	SystemdCgroup bool
	// RegistryHosts are the hosts.toml files of the CRI plugin's registry
	// config_path, RootDir/containerd/certs.d (always set, so that
	// containerd reads hosts files), by host directory name ("docker.io",
	// "127.0.0.1:5443", "_default"). Start replaces the directory's
	// content with them (none: an empty directory). See registries/.
	RegistryHosts map[string]string
	// RegistryAuths become the CRI plugin's registry.configs."<host>".auth
	// entries, by the host[:port] containerd contacts. Credentials that
	// the agent passes with a pull take precedence.
	RegistryAuths map[string]RegistryAuth
	// ShimGroups lets the runc runtime group containers of several pods
	// under one shim: the CRI plugin passes the pod annotation
	// runtime.AnnotationShimGroup to the specs (pod_annotations), where
	// containerd-shim-runc-v2 groups by it. The agent sets it on sandboxes
	// (runtime/cri.WithShimGroups); false: one shim per pod.
	ShimGroups bool
}

// RegistryAuth is a credential in the CRI plugin's config (containerd 1.6
// AuthConfig): Username and Password, or Auth (base64 of
// "user:password"), or IdentityToken.
type RegistryAuth struct {
	Username, Password, Auth, IdentityToken string
}

// paths are the files of one managed containerd.
type paths struct {
	dir, config, root, state, tmp, socket, pidFile, opt, certsD string
}

func pathsFor(rootDir string) paths {
	dir := filepath.Join(rootDir, "containerd")
	return paths{
		dir:     dir,
		config:  filepath.Join(dir, "config.toml"),
		root:    filepath.Join(dir, "root"),
		state:   filepath.Join(dir, "state"),
		tmp:     filepath.Join(dir, "tmp"),
		socket:  filepath.Join(dir, "containerd.sock"),
		pidFile: filepath.Join(dir, "containerd.pid"),
		opt:     filepath.Join(dir, "opt"),
		certsD:  filepath.Join(dir, "certs.d"),
	}
}

// maxSocketPath is the limit of sun_path on Linux, less the NUL and the
// ".ttrpc" suffix containerd appends for its ttrpc socket.
const maxSocketPath = 107 - len(".ttrpc")

// withDefaults validates cfg and fills in defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.RootDir == "" {
		return cfg, fmt.Errorf("containerd config: RootDir is required")
	}
	if !filepath.IsAbs(cfg.RootDir) {
		abs, err := filepath.Abs(cfg.RootDir)
		if err != nil {
			return cfg, fmt.Errorf("containerd config: root dir: %w", err)
		}
		cfg.RootDir = abs
	}
	if cfg.SandboxImage == "" {
		return cfg, fmt.Errorf("containerd config: SandboxImage is required")
	}
	if s := pathsFor(cfg.RootDir).socket; len(s) > maxSocketPath {
		return cfg, fmt.Errorf("containerd config: socket path %s is longer than %d bytes; use a shorter root dir", s, maxSocketPath)
	}
	if cfg.Binary == "" {
		cfg.Binary = DefaultBinary
	}
	if cfg.CNIBinDir == "" {
		cfg.CNIBinDir = DefaultCNIBinDir
	}
	if cfg.CNIConfDir == "" {
		cfg.CNIConfDir = filepath.Join(cfg.RootDir, "cni", "net.d")
	}
	if cfg.RestrictOOMScoreAdj == nil {
		has, err := hasCapSysResource("/proc/self/status")
		if err != nil {
			return cfg, fmt.Errorf("containerd config: %w", err)
		}
		restrict := !has
		cfg.RestrictOOMScoreAdj = &restrict
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(pathsFor(cfg.RootDir).dir, "containerd.log")
	}
	return cfg, nil
}

// capSysResource is the bit of CAP_SYS_RESOURCE in the capability sets.
const capSysResource = 24

// hasCapSysResource reads the effective capabilities (CapEff) from a
// /proc/<pid>/status file.
func hasCapSysResource(statusFile string) (bool, error) {
	f, err := os.Open(statusFile)
	if err != nil {
		return false, fmt.Errorf("read capabilities: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return false, fmt.Errorf("parse CapEff in %s: %w", statusFile, err)
		}
		return caps&(1<<capSysResource) != 0, nil
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read capabilities: %w", err)
	}
	return false, fmt.Errorf("no CapEff line in %s", statusFile)
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// tomlString quotes s as a TOML basic string (s has no control characters).
func tomlString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`
}
