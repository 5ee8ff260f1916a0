package cgroups

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Mode is the cgroup version of the machine.
type Mode int

// Cgroup modes.
const (
	// V1 is the legacy or hybrid layout: one hierarchy per controller
	// under /sys/fs/cgroup/<controller>.
	V1 Mode = 1
	// V2 is the unified hierarchy: cgroup2fs mounted on /sys/fs/cgroup.
	V2 Mode = 2
)

func (m Mode) String() string { return fmt.Sprintf("v%d", int(m)) }

// UnifiedMountpoint is where cgroup2 is mounted in V2 mode.
const UnifiedMountpoint = "/sys/fs/cgroup"

// DetectMode reports V2 when the filesystem at mountpoint (normally
// /sys/fs/cgroup) is cgroup2fs, else V1 (D.7). It only stats the path.
func DetectMode(mountpoint string) (Mode, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mountpoint, &st); err != nil {
		return 0, fmt.Errorf("detect cgroup mode: statfs %s: %w", mountpoint, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return V2, nil
	}
	return V1, nil
}
