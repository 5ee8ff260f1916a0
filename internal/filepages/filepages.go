// Package filepages keeps a long-running Go process's resident set to the
// file pages it uses: its executable's code and read-only data, and its
// read-only shared file mappings, are unmapped now and then and come back
// on their next use (decision 119).
package filepages

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Release unmaps from this process, with madvise(MADV_DONTNEED),
// the pages of the running executable's read-only mappings (code,
// read-only data, the function tables) and of every read-only shared file
// mapping (skiff-apiserver's embedded etcd's bbolt database). The files' pages stay in
// the page cache; those the process still uses are mapped again at their
// next access (a minor fault), so what stays resident is the working set
// since the call instead of every page start-up or a burst touched.
// Writable mappings are left alone (their pages may hold data), and so are
// private mappings of other files and those of an executable that is not
// a fixed-address ELF one (a position-independent one's relocated
// read-only data would be lost). An error says what could not be read or
// advised; what could was released.
//
// With evict, the executable is also read page by page from then on
// (madvise(MADV_RANDOM) on its mappings: no read-ahead on a fault) and,
// once unmapped, its pages leave the page cache
// (posix_fadvise(POSIX_FADV_DONTNEED)). Why: on a fault the kernel maps
// every cached page around the one faulted in (fault-around, 64 KB), so
// with the whole executable cached, as after an install or a start, each
// page used again brought its neighbours back into the resident set (a
// sparse working set of ~35 MB of RSS); with only the pages used in the
// cache, fault-around finds little else to map (decision 119).
func Release(evict bool) (released uint64, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("executable: %w", err)
	}
	// A replaced executable reads "<path> (deleted)"; its mappings
	// still name <path>.
	exe = strings.TrimSuffix(exe, " (deleted)")
	fixed, err := fixedAddress("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	ranges, err := releasableRanges(exe)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, r := range ranges {
		if r.exe && !fixed {
			continue
		}
		if evict && r.exe {
			// Only advice: without it the eviction saves less.
			errs = append(errs, madvise(r, unix.MADV_RANDOM))
		}
		if err := madvise(r, unix.MADV_DONTNEED); err != nil {
			errs = append(errs, err)
			continue
		}
		released += r.end - r.start
	}
	if evict && fixed {
		errs = append(errs, evictFile("/proc/self/exe"))
	}
	return released, errors.Join(errs...)
}

// fixedAddress reports whether the ELF executable at path is of type
// ET_EXEC (Go's default static build): its read-only mappings hold the
// file's bytes only, never relocations.
func fixedAddress(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("executable: %w", err)
	}
	defer f.Close()
	return f.Type == elf.ET_EXEC, nil
}

// mapping is one line of /proc/self/maps: [start, end), of the
// executable or not.
type mapping struct {
	start, end uint64
	exe        bool
}

// releasableRanges are the mappings of /proc/self/maps that releasable
// accepts, exe being the executable's path.
func releasableRanges(exe string) ([]mapping, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("mappings: %w", err)
	}
	defer f.Close()
	var out []mapping
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
		out = append(out, mapping{start: start, end: end, exe: fields[5] == exe})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mappings: %w", err)
	}
	return out, nil
}

// madvise gives advice on the mapping m.
func madvise(m mapping, advice int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), uintptr(advice)); errno != 0 {
		return fmt.Errorf("madvise %x-%x (%d): %w", m.start, m.end, advice, errno)
	}
	return nil
}

// evictFile drops the pages of the file at path that no process maps
// from the page cache. It writes the file's dirty pages first (a freshly
// built or copied executable's), which the page cache would keep.
func evictFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("evict: %w", err)
	}
	defer f.Close()
	var errs []error
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		// A file system that cannot sync: its clean pages still go.
		errs = append(errs, fmt.Errorf("fdatasync %s: %w", path, err))
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		errs = append(errs, fmt.Errorf("fadvise %s: %w", path, err))
	}
	return errors.Join(errs...)
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
