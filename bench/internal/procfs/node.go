package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Runtime names the processes of one container runtime: its containerd's
// pid and the socket its shims were started with (-address).
type Runtime struct {
	ContainerdPid int
	Socket        string
}

// NodeSample is one reading of an agent and its runtime, taken in one walk
// of /proc: the agent, its containerd and that containerd's shims (by pid).
// ChildTicks of the containerd and of the shims are the CPU of their reaped
// children: runc calls, exec'd probe commands, CNI plugins.
type NodeSample struct {
	At         time.Time
	Agent      Sample
	Containerd Sample
	Shims      map[int]Sample
	// Pause: the sandboxes' pause processes (named "pause", children of
	// the shims).
	Pause map[int]Sample
}

// Memory is the sample's RSS and PSS summed over its processes: the
// agent, the containerd, the shims and the pause processes.
func (s NodeSample) Memory() (rss, pss uint64) {
	shims, pause := memorySum(s.At, s.Shims), memorySum(s.At, s.Pause)
	return s.Agent.RSSBytes + s.Containerd.RSSBytes + shims.RSSBytes + pause.RSSBytes,
		s.Agent.PSSBytes + s.Containerd.PSSBytes + shims.PSSBytes + pause.PSSBytes
}

// NodeWindow summarises node samples over a window. RSS and PSS figures
// are summed over the processes of each sample (mean and maximum of the
// sums). A shim's shared pages (its executable) count once per shim in the
// RSS sum, an upper bound of the memory the shims use; in the PSS sum they
// count once in all, which is what the shims cost the node.
type NodeWindow struct {
	Seconds    float64 `json:"seconds"`
	Agent      Window  `json:"agent"`
	Containerd Window  `json:"containerd"`
	// Shims: every shim of the runtime's socket; ShimCount is how many the
	// last sample found. The CPU counts the shims present in the first and
	// the last sample.
	Shims     Window `json:"shims"`
	ShimCount int    `json:"shim_count"`
	// Pause: the pause processes of the sandboxes (memory only: they
	// sleep); PauseCount is how many the last sample found.
	Pause      Window `json:"pause"`
	PauseCount int    `json:"pause_count"`
	// ChildrenCPUPercent is the CPU of the containerd's and the shims'
	// children reaped during the window (runc, exec'd probe commands, CNI
	// plugins), % of one core.
	ChildrenCPUPercent float64 `json:"children_cpu_percent_of_core"`
	// Total is the agent, the containerd, the shims and the pause
	// processes per sample, its CPU with the reaped children.
	Total Window `json:"total"`
}

// ParseStatChildren returns cutime+cstime (fields 16 and 17: the CPU of
// the process's reaped children) from the contents of /proc/<pid>/stat.
func ParseStatChildren(data string) (uint64, error) {
	end := strings.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc stat: no ')' in %q", truncate(data))
	}
	fields := strings.Fields(data[end+1:])
	if len(fields) < 15 {
		return 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 15", len(fields))
	}
	var sum uint64
	for _, f := range fields[13:15] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc stat children's times: %w", err)
		}
		sum += n
	}
	return sum, nil
}

// IsShimOf reports whether args (a /proc/<pid>/cmdline split at NULs) is
// a containerd shim (an executable named containerd-shim*) started with
// -address socket. Pure.
func IsShimOf(args []string, socket string) bool {
	if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
		return false
	}
	for i, a := range args[:len(args)-1] {
		if (a == "-address" || a == "--address") && args[i+1] == socket {
			return true
		}
	}
	return false
}

// ReadNode samples the agent (agentPid), rt's containerd and its shims in
// one walk of procRoot (normally /proc). The agent and the containerd must
// be readable; a shim that vanishes while being read is left out.
func ReadNode(procRoot string, agentPid int, rt Runtime, now time.Time) (NodeSample, error) {
	s := NodeSample{At: now, Shims: map[int]Sample{}}
	var err error
	if s.Agent, err = ReadWithPSS(procRoot, agentPid, now); err != nil {
		return s, fmt.Errorf("agent: %w", err)
	}
	if s.Containerd, err = ReadWithPSS(procRoot, rt.ContainerdPid, now); err != nil {
		return s, fmt.Errorf("containerd: %w", err)
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return s, fmt.Errorf("list %s: %w", procRoot, err)
	}
	pauses := map[int]int{} // pid -> parent
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == agentPid || pid == rt.ContainerdPid {
			continue
		}
		if ppid, ok := pauseParent(procRoot, e.Name()); ok {
			pauses[pid] = ppid
			continue
		}
		data, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil || !IsShimOf(strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), rt.Socket) {
			continue
		}
		if sh, err := ReadWithPSS(procRoot, pid, now); err == nil {
			s.Shims[pid] = sh
		}
	}
	s.Pause = map[int]Sample{}
	for pid, ppid := range pauses {
		if _, ok := s.Shims[ppid]; !ok {
			continue
		}
		if p, err := ReadWithPSS(procRoot, pid, now); err == nil {
			s.Pause[pid] = p
		}
	}
	return s, nil
}

// pauseParent returns the parent of process name (a /proc entry) when its
// command is "pause".
func pauseParent(procRoot, name string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(procRoot, name, "stat"))
	if err != nil {
		return 0, false
	}
	comm, ppid, err := ParseStatParent(string(data))
	return ppid, err == nil && comm == "pause"
}

// ParseStatParent returns the command name (field 2, without its
// parentheses) and the parent's pid (field 4) from the contents of
// /proc/<pid>/stat.
func ParseStatParent(data string) (string, int, error) {
	open, end := strings.IndexByte(data, '('), strings.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return "", 0, fmt.Errorf("parse /proc stat: no command in %q", truncate(data))
	}
	fields := strings.Fields(data[end+1:])
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 2", len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, fmt.Errorf("parse /proc stat ppid: %w", err)
	}
	return data[open+1 : end], ppid, nil
}

// SummarizeNode reduces node samples (in time order, at least two) to a
// NodeWindow; see Summarize. It fails when the agent's or the
// containerd's tick counters went back (another process).
func SummarizeNode(samples []NodeSample) (NodeWindow, error) {
	if len(samples) < 2 {
		return NodeWindow{}, fmt.Errorf("summarize node window: %d samples, want at least 2", len(samples))
	}
	var w NodeWindow
	var err error
	n := len(samples)
	agent, cd, shims, pause, total := make([]Sample, n), make([]Sample, n), make([]Sample, n), make([]Sample, n), make([]Sample, n)
	for i, s := range samples {
		agent[i], cd[i] = s.Agent, s.Containerd
		shims[i], pause[i] = memorySum(s.At, s.Shims), memorySum(s.At, s.Pause)
		rss, pss := s.Memory()
		total[i] = Sample{At: s.At, RSSBytes: rss, PSSBytes: pss}
	}
	// The shims' and children's CPU: ticks between the first and the
	// last sample of the processes in both.
	first, last := samples[0], samples[len(samples)-1]
	var shimTicks, childTicks uint64
	for pid, b := range last.Shims {
		if a, ok := first.Shims[pid]; ok && b.CPUTicks >= a.CPUTicks && b.ChildTicks >= a.ChildTicks {
			shimTicks += b.CPUTicks - a.CPUTicks
			childTicks += b.ChildTicks - a.ChildTicks
		}
	}
	if last.Containerd.ChildTicks >= first.Containerd.ChildTicks {
		childTicks += last.Containerd.ChildTicks - first.Containerd.ChildTicks
	}
	shims[len(shims)-1].CPUTicks = shimTicks
	total[len(total)-1].CPUTicks = shimTicks + childTicks +
		(last.Agent.CPUTicks - first.Agent.CPUTicks) + (last.Containerd.CPUTicks - first.Containerd.CPUTicks)
	if w.Agent, err = Summarize(agent); err != nil {
		return w, fmt.Errorf("agent: %w", err)
	}
	if w.Containerd, err = Summarize(cd); err != nil {
		return w, fmt.Errorf("containerd: %w", err)
	}
	if w.Shims, err = Summarize(shims); err != nil {
		return w, fmt.Errorf("shims: %w", err)
	}
	if w.Pause, err = Summarize(pause); err != nil {
		return w, fmt.Errorf("pause: %w", err)
	}
	if w.Total, err = Summarize(total); err != nil {
		return w, fmt.Errorf("total: %w", err)
	}
	w.Seconds, w.ShimCount, w.PauseCount = w.Agent.Seconds, len(last.Shims), len(last.Pause)
	w.ChildrenCPUPercent = 100 * float64(childTicks) / UserHZ / w.Seconds
	return w, nil
}

// memorySum is a sample at of the processes' RSS and PSS summed.
func memorySum(at time.Time, procs map[int]Sample) Sample {
	sum := Sample{At: at}
	for _, p := range procs {
		sum.RSSBytes += p.RSSBytes
		sum.PSSBytes += p.PSSBytes
	}
	return sum
}
