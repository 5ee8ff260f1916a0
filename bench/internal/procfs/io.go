package procfs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// IO is the write side of /proc/<pid>/io (issue 33's storage wear). The
// kernel counts a thread group's threads and, once reaped, its children
// (as it does cutime): a reaped runc or mount is its parent's.
//
// WriteBytes is what the process caused to be sent to storage: a page
// cache page it dirtied counts once (4 KiB), whatever it wrote into it,
// until writeback cleans it; appending to a page still dirty counts
// nothing more. Files on tmpfs count nothing. CancelledWriteBytes is
// dirty data that never reached storage because the process truncated or
// deleted the file first (a temporary file renamed over and the old one
// removed while still dirty). WChar is every byte passed to write(2) and
// its kin, sockets and pipes included: not storage.
type IO struct {
	WChar               uint64 `json:"wchar"`
	WriteBytes          uint64 `json:"write_bytes"`
	CancelledWriteBytes uint64 `json:"cancelled_write_bytes"`
}

// ParseIO reads the contents of /proc/<pid>/io ("key: value" lines).
func ParseIO(data string) (IO, error) {
	var io IO
	fields := map[string]*uint64{"wchar": &io.WChar, "write_bytes": &io.WriteBytes, "cancelled_write_bytes": &io.CancelledWriteBytes}
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		dst, want := fields[strings.TrimSpace(key)]
		if !ok || !want {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return IO{}, fmt.Errorf("parse /proc io %s: %w", key, err)
		}
		*dst = n
		seen++
	}
	if seen != len(fields) {
		return IO{}, fmt.Errorf("parse /proc io: %d of the %d fields wchar, write_bytes, cancelled_write_bytes (kernel without CONFIG_TASK_IO_ACCOUNTING?)", seen, len(fields))
	}
	return io, nil
}

// ReadIO reads /proc/<pid>/io under procRoot (root may read any
// process's).
func ReadIO(procRoot string, pid int) (IO, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "io"))
	if err != nil {
		return IO{}, fmt.Errorf("read process %d io: %w", pid, err)
	}
	io, err := ParseIO(string(data))
	if err != nil {
		return IO{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return io, nil
}

// Since is b - a, counter by counter; it fails when a counter went back
// (a and b are not one process).
func (b IO) Since(a IO) (IO, error) {
	if b.WChar < a.WChar || b.WriteBytes < a.WriteBytes || b.CancelledWriteBytes < a.CancelledWriteBytes {
		return IO{}, fmt.Errorf("io counters went back from %+v to %+v", a, b)
	}
	return IO{WChar: b.WChar - a.WChar, WriteBytes: b.WriteBytes - a.WriteBytes, CancelledWriteBytes: b.CancelledWriteBytes - a.CancelledWriteBytes}, nil
}

// Plus returns a + b.
func (b IO) Plus(a IO) IO {
	return IO{WChar: a.WChar + b.WChar, WriteBytes: a.WriteBytes + b.WriteBytes, CancelledWriteBytes: a.CancelledWriteBytes + b.CancelledWriteBytes}
}

// IOTracker sums the writes of a changing set of processes (containerd's
// shims, which come and go with pods) over a window from samples taken
// every second or so: a process in the first sample counts from its value
// there, one that appears later from zero (it started in the window),
// and each until its last sample (what a process writes between its last
// sample and its exit is lost). The zero value is ready; not safe for
// concurrent use.
type IOTracker struct {
	base, last map[int]IO
	started    bool
}

// Add records one sample: the counters of the set's processes by pid.
func (t *IOTracker) Add(sample map[int]IO) {
	if !t.started {
		t.base, t.last, t.started = map[int]IO{}, map[int]IO{}, true
		for pid, io := range sample {
			t.base[pid] = io
		}
	}
	for pid, io := range sample {
		if prev, ok := t.last[pid]; ok && io.WriteBytes < prev.WriteBytes {
			t.base[pid] = IO{} // the pid was reused: another process from zero
		}
		t.last[pid] = io
	}
}

// Total is the set's writes over the samples so far and how many
// processes they came from.
func (t *IOTracker) Total() (IO, int) {
	var sum IO
	for pid, last := range t.last {
		d, err := last.Since(t.base[pid])
		if err != nil {
			d = last // reused pid between the first sample and this one's
		}
		sum = sum.Plus(d)
	}
	return sum, len(t.last)
}

// ShimIO reads the counters of every shim of socket (IsShimOf) under
// procRoot (normally /proc), by pid; a shim that vanishes while being
// read is left out.
func ShimIO(procRoot, socket string) (map[int]IO, error) {
	pids, err := findPids(procRoot, func(args []string) bool { return IsShimOf(args, socket) })
	if err != nil {
		return nil, err
	}
	out := make(map[int]IO, len(pids))
	for _, pid := range pids {
		if io, err := ReadIO(procRoot, pid); err == nil {
			out[pid] = io
		}
	}
	return out, nil
}

// PidsWithArg returns the pids under procRoot whose command line has arg
// as one of its arguments (exactly): a process found by its flags, as
// etcd by its --data-dir=.
func PidsWithArg(procRoot, arg string) ([]int, error) {
	return findPids(procRoot, func(args []string) bool { return slices.Contains(args[1:], arg) })
}

// findPids returns the pids under procRoot whose command line (split at
// NULs, at least one element) match accepts; processes that vanish while
// being read are skipped.
func findPids(procRoot string, match func(args []string) bool) ([]int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", procRoot, err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
