package network

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The CNI state outside skiff's root dir, as the plugins and libcni keep it
// by default.
const (
	// CNICacheDir is where libcni keeps the result of each ADD; containerd
	// does not let it be configured.
	CNICacheDir = "/var/lib/cni"
	// defaultIPAMDir is host-local's default data directory (one per
	// network under it).
	defaultIPAMDir = "/var/lib/cni/networks"
)

// StateDirs keeps the managed runtime's CNI state under stateDir
// (<root-dir>/cni), so that a node whose root file system is read-only
// (only the root dir, the pod logs and /run writable) runs pods:
//   - host-local's records of the pods' IPs go to <stateDir>/networks (the
//     returned directory, for BridgeConfig.IPAMDataDir); records an earlier
//     skiff left in host-local's default directory are copied there once,
//     so that no running pod's IP is handed out again;
//   - where CNICacheDir is on a read-only file system, <stateDir>/cache is
//     bind-mounted over it (in skiff's mount namespace, which its
//     containerd shares). A missing CNICacheDir that cannot be created is
//     an error naming it.
func StateDirs(stateDir, network string, log *slog.Logger) (ipamDir string, err error) {
	ipamDir = filepath.Join(stateDir, "networks")
	if err := migrateIPAM(filepath.Join(defaultIPAMDir, network), filepath.Join(ipamDir, network)); err != nil {
		return "", err
	}
	mounted, err := ensureWritable(CNICacheDir, filepath.Join(stateDir, "cache"))
	if err != nil {
		return "", err
	}
	if mounted {
		log.Info("CNI result cache on a read-only file system: bind-mounted from the root dir", "dir", CNICacheDir, "from", filepath.Join(stateDir, "cache"))
	}
	return ipamDir, nil
}

// migrateIPAM creates to, first copying the regular files of from into it
// when from exists and to does not yet.
func migrateIPAM(from, to string) error {
	if _, err := os.Stat(to); err == nil {
		return nil
	}
	entries, err := os.ReadDir(from)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("CNI IP records %s: %w", from, err)
	}
	tmp := to + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("CNI IP records: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("CNI IP records: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return fmt.Errorf("CNI IP records: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), data, 0o644); err != nil {
			return fmt.Errorf("CNI IP records: %w", err)
		}
	}
	if err := os.Rename(tmp, to); err != nil {
		return fmt.Errorf("CNI IP records: %w", err)
	}
	return nil
}

// ensureWritable makes dir writable: created if missing, else, on a
// read-only file system, with src bind-mounted over it. It reports
// whether it mounted.
func ensureWritable(dir, src string) (bool, error) {
	err := os.MkdirAll(dir, 0o755)
	switch {
	case errors.Is(err, unix.EROFS):
		return false, fmt.Errorf("%s is missing on a read-only file system: create the directory in the image (skiff mounts a writable one over it)", dir)
	case err != nil:
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	if err := unix.Access(dir, unix.W_OK); !errors.Is(err, unix.EROFS) {
		return false, nil // writable (or a problem the runtime will name)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return false, fmt.Errorf("%s: %w", src, err)
	}
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		return false, fmt.Errorf("bind-mounting %s over the read-only %s: %w", src, dir, err)
	}
	return true, nil
}
