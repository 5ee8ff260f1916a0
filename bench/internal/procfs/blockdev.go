package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SectorBytes is the unit of the sector counts of /sys/block/<dev>/stat:
// always 512 bytes, whatever the device's own sector size.
const SectorBytes = 512

// ParseBlockStat returns the sectors written (field 7) from the contents
// of a block device's stat file (/sys/block/<dev>/stat, or a partition's,
// same format: Documentation/block/stat.rst).
func ParseBlockStat(data string) (uint64, error) {
	f := strings.Fields(data)
	if len(f) < 11 {
		return 0, fmt.Errorf("parse block stat: %d fields, want at least 11", len(f))
	}
	n, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse block stat sectors written: %w", err)
	}
	return n, nil
}

// BlockDev is the block device (or partition) that holds a path, by its
// /sys/dev/block entry.
type BlockDev struct {
	// Name is the kernel's name: vda, sda1, nvme0n1p2, dm-0.
	Name string `json:"name"`
	// Stat is its stat file.
	Stat string `json:"-"`
}

// BlockDevOf finds the block device of the filesystem holding path, under
// sysRoot (normally /sys). A filesystem on no block device of its own
// (tmpfs, overlay, btrfs's anonymous devices) is an error.
func BlockDevOf(sysRoot, path string) (BlockDev, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return BlockDev{}, fmt.Errorf("block device of %s: %w", path, err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	if major == 0 {
		return BlockDev{}, fmt.Errorf("block device of %s: its filesystem is on no block device (device 0:%d)", path, minor)
	}
	link := filepath.Join(sysRoot, "dev", "block", fmt.Sprintf("%d:%d", major, minor))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return BlockDev{}, fmt.Errorf("block device of %s: %w", path, err)
	}
	d := BlockDev{Name: filepath.Base(dir), Stat: filepath.Join(dir, "stat")}
	if _, err := d.BytesWritten(); err != nil {
		return BlockDev{}, fmt.Errorf("block device of %s: %w", path, err)
	}
	return d, nil
}

// BytesWritten is the device's sectors written since boot, in bytes.
func (d BlockDev) BytesWritten() (uint64, error) {
	if d.Stat == "" {
		return 0, errors.New("block device: no stat file")
	}
	data, err := os.ReadFile(d.Stat)
	if err != nil {
		return 0, fmt.Errorf("read %s stat: %w", d.Name, err)
	}
	n, err := ParseBlockStat(string(data))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", d.Name, err)
	}
	return n * SectorBytes, nil
}

// FSTypeOf returns the type of the filesystem mounted at the deepest
// mount point of mountinfo (the contents of /proc/<pid>/mountinfo) that
// is path or above it; "" when none is. Pure.
func FSTypeOf(mountinfo, path string) string {
	path = filepath.Clean(path)
	best, fstype := -1, ""
	for line := range strings.SplitSeq(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		mp := unescapeMount(f[4])
		under := mp == "/" || path == mp || strings.HasPrefix(path, mp+"/")
		if under && len(mp) >= best { // a later mount over the same point hides an earlier one
			best, fstype = len(mp), g[0]
		}
	}
	return fstype
}

// Ext4Journal reports whether the ext4 filesystem on the device named
// name has a journal: /sys/fs/ext4/<name>/journal_task names its jbd2
// thread, or is "<none>" without one. ok is false where that cannot be
// read (another filesystem, an older kernel).
func Ext4Journal(sysRoot, name string) (journal, ok bool) {
	data, err := os.ReadFile(filepath.Join(sysRoot, "fs", "ext4", name, "journal_task"))
	if err != nil {
		return false, false
	}
	return strings.TrimSpace(string(data)) != "<none>", true
}

// DescribeFS is the filesystem holding path on device dev, for a
// report: "ext4, no journal", "xfs"; "" when unknown.
func DescribeFS(sysRoot, mountinfo, path string, dev BlockDev) string {
	fstype := FSTypeOf(mountinfo, path)
	if fstype != "ext4" || dev.Name == "" {
		return fstype
	}
	switch journal, ok := Ext4Journal(sysRoot, dev.Name); {
	case !ok:
		return fstype
	case journal:
		return "ext4 with a journal"
	default:
		return "ext4, no journal"
	}
}
