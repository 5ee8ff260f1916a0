// Package procfs samples a process's CPU time and resident memory from
// /proc, from outside the process: utime+stime of /proc/<pid>/stat, VmRSS
// of /proc/<pid>/status and (for the node footprint) Pss of
// /proc/<pid>/smaps_rollup; ReadMemory breaks VmRSS down by kind (RssAnon,
// RssFile, RssShmem). The parsers are pure; Read and ReadMemory do the I/O.
// ShimsOf finds containerd shims by their command line; ReadNode samples
// an agent, its containerd and that containerd's shims together.
package procfs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UserHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, the
// kernel's clock ticks as seen by user space; 100 on every Linux ABI).
const UserHZ = 100

// Sample is one reading of a process.
type Sample struct {
	At       time.Time // when the sample was read
	CPUTicks uint64    // utime + stime, in 1/UserHZ seconds
	RSSBytes uint64    // VmRSS
	// ChildTicks is cutime + cstime: the CPU of reaped children.
	ChildTicks uint64
	// PSSBytes is the proportional set size (Pss of smaps_rollup: a page
	// shared by n processes counts 1/n to each); 0 where not read (only
	// ReadNode reads it).
	PSSBytes uint64
}

// ParseStat returns utime+stime from the contents of /proc/<pid>/stat. The
// command name (field 2) may contain spaces and parentheses, so the fields
// are counted from the last ')'.
func ParseStat(data string) (uint64, error) {
	end := strings.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc stat: no ')' in %q", truncate(data))
	}
	// After ") " come field 3 (state) onwards; utime and stime are fields
	// 14 and 15, so indexes 11 and 12 here.
	fields := strings.Fields(data[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc stat utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc stat stime: %w", err)
	}
	return utime + stime, nil
}

// ParsePss returns Pss in bytes from the contents of
// /proc/<pid>/smaps_rollup.
func ParsePss(data string) (uint64, error) {
	return parseKB(data, "Pss:", "smaps_rollup")
}

// ParseVmRSS returns VmRSS in bytes from the contents of /proc/<pid>/status.
func ParseVmRSS(data string) (uint64, error) {
	return parseKB(data, "VmRSS:", "status")
}

// parseKB returns the value of the first line starting with key, given as
// "<n> kB", in bytes; file names the /proc file in errors.
func parseKB(data, key, file string) (uint64, error) {
	name := strings.TrimSuffix(key, ":")
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("parse %s %q: want \"<n> kB\"", name, rest)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %w", name, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("parse /proc %s: no %s line", file, name)
}

// Read samples process pid under procRoot (normally "/proc"). Not
// atomic: CPU and RSS are read one after the other.
func Read(procRoot string, pid int, now time.Time) (Sample, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Sample{}, fmt.Errorf("read process %d stat: %w", pid, err)
	}
	ticks, err := ParseStat(string(stat))
	if err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	children, err := ParseStatChildren(string(stat))
	if err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Sample{}, fmt.Errorf("read process %d status: %w", pid, err)
	}
	rss, err := ParseVmRSS(string(status))
	if err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return Sample{At: now, CPUTicks: ticks, RSSBytes: rss, ChildTicks: children}, nil
}

// ReadWithPSS is Read plus the process's Pss from smaps_rollup (the
// kernel walks the process's page tables for it: kept to the node
// footprint's once-a-second samples).
func ReadWithPSS(procRoot string, pid int, now time.Time) (Sample, error) {
	s, err := Read(procRoot, pid, now)
	if err != nil {
		return s, err
	}
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return Sample{}, fmt.Errorf("read process %d smaps_rollup: %w", pid, err)
	}
	if s.PSSBytes, err = ParsePss(string(data)); err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return s, nil
}

// CPUPercent is the CPU used between two samples as a percentage of one
// core (100 = one core fully busy). It returns an error when b is not after
// a or the tick counter went backwards (a different process).
func CPUPercent(a, b Sample) (float64, error) {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0, fmt.Errorf("cpu percent: second sample (%s) not after the first (%s)", b.At, a.At)
	}
	if b.CPUTicks < a.CPUTicks {
		return 0, fmt.Errorf("cpu percent: tick counter went back from %d to %d", a.CPUTicks, b.CPUTicks)
	}
	cpu := float64(b.CPUTicks-a.CPUTicks) / UserHZ
	return 100 * cpu / wall.Seconds(), nil
}

// Window summarises samples taken over a steady-state window.
type Window struct {
	Seconds    float64 `json:"seconds"`
	CPUPercent float64 `json:"cpu_percent_of_core"`
	RSSMeanMB  float64 `json:"rss_mean_mb"`
	RSSMaxMB   float64 `json:"rss_max_mb"`
	// PSSMaxMB is the maximum Pss (0: not read).
	PSSMaxMB float64 `json:"pss_max_mb,omitempty"`
}

// Summarize reduces samples (in time order, at least two) to the CPU
// percentage between the first and the last and the mean and maximum RSS
// (MB = 10^6 bytes).
func Summarize(samples []Sample) (Window, error) {
	if len(samples) < 2 {
		return Window{}, fmt.Errorf("summarize window: %d samples, want at least 2", len(samples))
	}
	first, last := samples[0], samples[len(samples)-1]
	cpu, err := CPUPercent(first, last)
	if err != nil {
		return Window{}, err
	}
	var sum, peak, pss uint64
	for _, s := range samples {
		sum += s.RSSBytes
		peak = max(peak, s.RSSBytes)
		pss = max(pss, s.PSSBytes)
	}
	return Window{
		Seconds:    last.At.Sub(first.At).Seconds(),
		CPUPercent: cpu,
		RSSMeanMB:  float64(sum) / float64(len(samples)) / 1e6,
		RSSMaxMB:   float64(peak) / 1e6,
		PSSMaxMB:   float64(pss) / 1e6,
	}, nil
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// ShimsOf returns the pids of containerd shims (an executable named
// containerd-shim*) whose -address is a socket under root, found in
// procRoot (normally /proc). Once the harness has removed every sandbox and
// stopped the containerd of root, any such shim is a leak: containerd 1.6
// left one behind in a full run (no children, bundle deleted). Processes
// that vanish while being read are skipped.
func ShimsOf(procRoot, root string) ([]int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", procRoot, err)
	}
	prefix := filepath.Clean(root) + string(filepath.Separator)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i, a := range args[:len(args)-1] {
			if a == "-address" && strings.HasPrefix(args[i+1], prefix) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// MountsUnder returns the mount points below dir (not dir itself) listed in
// mountinfo (the contents of /proc/<pid>/mountinfo), deepest first, so that
// unmounting them in order never finds a busy parent. Pure.
func MountsUnder(mountinfo, dir string) []string {
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	var out []string
	for line := range strings.SplitSeq(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	// Deepest first: a longer path is never the parent of a shorter one.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
