package server

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseFilePages unmaps from this process, with madvise(MADV_DONTNEED),
// the pages of the running executable's read-only mappings (code,
// read-only data, the function tables) and of every read-only shared file
// mapping (the embedded etcd's bbolt database). The files' pages stay in
// the page cache; those the process still uses are mapped again at their
// next access (a minor fault), so what stays resident is the working set
// since the call instead of every page start-up or a burst touched.
// Writable mappings are left alone (their pages may hold data), and so are
// private mappings of other files. It is a no-op where /proc/self/maps
// cannot be read.
func releaseFilePages() (released uint64, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("mappings: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !releasable(fields[1], fields[5], exe) {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("madvise %s: %w", fields[0], errno)
		}
		released += end - start
	}
	if err := sc.Err(); err != nil {
		return released, fmt.Errorf("mappings: %w", err)
	}
	return released, nil
}

// releasable reports whether a mapping with permissions perms ("r-xp")
// of path may lose its pages: read-only, and either the executable's or a
// shared mapping of a file (whose pages are the file's, never a private
// copy).
func releasable(perms, path, exe string) bool {
	if len(perms) < 4 || perms[0] != 'r' || perms[1] == 'w' || !strings.HasPrefix(path, "/") {
		return false
	}
	return path == exe || perms[3] == 's'
}
