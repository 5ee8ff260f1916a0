package procfs

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statLineChildren is statLine with cutime and cstime.
func statLineChildren(comm, utime, stime, cutime, cstime string) string {
	f := strings.Fields(statLine(comm, utime, stime))
	f[15], f[16] = cutime, cstime
	return strings.Join(f, " ") + "\n"
}

// statLineParent is a stat line of comm whose parent is ppid.
func statLineParent(comm, ppid string) string {
	f := strings.Fields(statLine(comm, "0", "0"))
	f[3] = ppid
	return strings.Join(f, " ") + "\n"
}

func TestParseStatParent(t *testing.T) {
	comm, ppid, err := ParseStatParent("7 (a (b) c) S 42 7 7 0")
	if err != nil || comm != "a (b) c" || ppid != 42 {
		t.Errorf("ParseStatParent = %q, %d, %v; want \"a (b) c\", 42", comm, ppid, err)
	}
	for _, bad := range []string{"7 no command", "7 (x) S", "7 (x) S y"} {
		if _, _, err := ParseStatParent(bad); err == nil {
			t.Errorf("ParseStatParent(%q): want error", bad)
		}
	}
}

func TestParseStatChildren(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    uint64
		wantErr bool
	}{
		{"reaped children", statLineChildren("containerd-shim", "5", "5", "70", "30"), 100, false},
		{"none", statLine("skiff", "150", "50"), 0, false},
		{"too short", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13", 0, true},
		{"bad number", statLineChildren("x", "1", "1", "z", "1"), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatChildren(tt.data)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseStatChildren = %d, %v; want %d, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestIsShimOf(t *testing.T) {
	const sock = "/tmp/sb-1/managed/containerd/containerd.sock"
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"its shim", []string{"/opt/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", sock}, true},
		{"double dash", []string{"containerd-shim-runc-v2", "--address", sock}, true},
		{"another containerd's shim", []string{"containerd-shim-runc-v2", "-address", "/run/containerd/containerd.sock"}, false},
		{"a socket below it", []string{"containerd-shim-runc-v2", "-address", sock + ".ttrpc"}, false},
		{"containerd itself", []string{"/usr/bin/containerd", "--address", sock}, false},
		{"-address last", []string{"containerd-shim-runc-v2", "-address"}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsShimOf(tt.args, sock); got != tt.want {
				t.Errorf("IsShimOf(%q) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

// fakeProcess is a process under a fake /proc: its cmdline, stat (""
// for one that vanished) and VmRSS in kB; its Pss is half its VmRSS.
type fakeProcess struct {
	cmdline, stat string
	rssKB         int
}

// writeProc writes procs (by pid) under root.
func writeProc(t *testing.T, root string, procs map[string]fakeProcess) {
	t.Helper()
	for pid, p := range procs {
		dir := filepath.Join(root, pid)
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(p.cmdline), 0o644))
		if p.stat != "" {
			must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(p.stat), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "status"), []byte("VmRSS:\t"+strconv.Itoa(p.rssKB)+" kB\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "smaps_rollup"), []byte("Rss:\t"+strconv.Itoa(p.rssKB)+" kB\nPss:\t"+strconv.Itoa(p.rssKB/2)+" kB\n"), 0o644))
		}
	}
}

func TestReadNode(t *testing.T) {
	const sock = "/tmp/sb-1/managed/containerd/containerd.sock"
	root := t.TempDir()
	writeProc(t, root, map[string]fakeProcess{
		"10":   {"/bin/skiff\x00agent\x00", statLine("skiff", "10", "5"), 40000},
		"20":   {"/bin/containerd\x00--config\x00/tmp/sb-1/managed/containerd/config.toml\x00", statLineChildren("containerd", "30", "10", "4", "1"), 30000},
		"30":   {"/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-id\x00a\x00-address\x00" + sock + "\x00", statLineChildren("containerd-shim", "2", "1", "50", "20"), 10000},
		"31":   {"/bin/containerd-shim-runc-v2\x00-id\x00b\x00-address\x00" + sock + "\x00", statLine("containerd-shim", "1", "1"), 9000},
		"32":   {"/bin/containerd-shim-runc-v2\x00-address\x00/run/containerd/containerd.sock\x00", statLine("containerd-shim", "1", "1"), 9000},
		"33":   {"/bin/containerd-shim-runc-v2\x00-address\x00" + sock + "\x00", "", 0}, // vanished: no stat
		"self": {"/bin/containerd-shim-runc-v2\x00-address\x00" + sock + "\x00", statLine("x", "1", "1"), 1},
		// Pause processes: of shim 30, of another containerd's shim 32, and
		// a process named pause that no shim started.
		"40": {"/pause\x00", statLineParent("pause", "30"), 600},
		"41": {"/pause\x00", statLineParent("pause", "32"), 600},
		"42": {"/pause\x00", statLineParent("pause", "10"), 600},
	})
	now := time.Now()
	s, err := ReadNode(root, 10, Runtime{ContainerdPid: 20, Socket: sock}, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Agent.CPUTicks != 15 || s.Agent.RSSBytes != 40000*1024 || s.Agent.PSSBytes != 20000*1024 ||
		s.Containerd.CPUTicks != 40 || s.Containerd.ChildTicks != 5 || s.Containerd.PSSBytes != 15000*1024 {
		t.Errorf("agent %+v, containerd %+v", s.Agent, s.Containerd)
	}
	pids := make([]int, 0, len(s.Shims))
	for pid := range s.Shims {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	if !slices.Equal(pids, []int{30, 31}) || s.Shims[30].ChildTicks != 70 || s.Shims[31].RSSBytes != 9000*1024 || s.Shims[31].PSSBytes != 4500*1024 {
		t.Errorf("shims %v: %+v, want 30 and 31 (its socket, readable)", pids, s.Shims)
	}
	if len(s.Pause) != 1 || s.Pause[40].PSSBytes != 300*1024 {
		t.Errorf("pause %+v, want 40 only (the child of one of its shims)", s.Pause)
	}
	if _, err := ReadNode(root, 10, Runtime{ContainerdPid: 99, Socket: sock}, now); err == nil {
		t.Error("ReadNode without its containerd: want error")
	}
	if _, err := ReadNode(root, 98, Runtime{ContainerdPid: 20, Socket: sock}, now); err == nil {
		t.Error("ReadNode without its agent: want error")
	}
}

func TestSummarizeNode(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mb := uint64(1e6)
	samples := []NodeSample{
		{At: t0, Agent: Sample{At: t0, CPUTicks: 100, RSSBytes: 40 * mb, PSSBytes: 39 * mb}, Containerd: Sample{At: t0, CPUTicks: 500, RSSBytes: 30 * mb, ChildTicks: 10},
			Shims: map[int]Sample{1: {CPUTicks: 10, RSSBytes: 10 * mb, PSSBytes: 2 * mb, ChildTicks: 100}, 2: {CPUTicks: 20, RSSBytes: 10 * mb, PSSBytes: 3 * mb}, 3: {CPUTicks: 5, RSSBytes: 10 * mb, PSSBytes: 4 * mb}},
			Pause: map[int]Sample{7: {RSSBytes: 1 * mb, PSSBytes: 1 * mb}, 8: {RSSBytes: 1 * mb, PSSBytes: 1 * mb}}},
		{At: t0.Add(5 * time.Second), Agent: Sample{At: t0.Add(5 * time.Second), CPUTicks: 105, RSSBytes: 42 * mb}, Containerd: Sample{At: t0.Add(5 * time.Second), CPUTicks: 510, RSSBytes: 30 * mb, ChildTicks: 10},
			Shims: map[int]Sample{1: {CPUTicks: 12, RSSBytes: 10 * mb, ChildTicks: 150}, 2: {CPUTicks: 21, RSSBytes: 12 * mb}}},
		// Shim 3 is gone; shim 4 is new: neither counts for CPU.
		{At: t0.Add(10 * time.Second), Agent: Sample{At: t0.Add(10 * time.Second), CPUTicks: 110, RSSBytes: 44 * mb}, Containerd: Sample{At: t0.Add(10 * time.Second), CPUTicks: 520, RSSBytes: 30 * mb, ChildTicks: 20},
			Shims: map[int]Sample{1: {CPUTicks: 14, RSSBytes: 10 * mb, ChildTicks: 200}, 2: {CPUTicks: 22, RSSBytes: 14 * mb}, 4: {CPUTicks: 900, RSSBytes: 6 * mb}}},
	}
	w, err := SummarizeNode(samples)
	if err != nil {
		t.Fatal(err)
	}
	// 10 s: agent 10 ticks (1 %), containerd 20 (2 %), shims 1 and 2: 4 + 2
	// (0.6 %), children 100 + 10 (11 %).
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"seconds", w.Seconds, 10},
		{"agent cpu", w.Agent.CPUPercent, 1},
		{"agent rss max", w.Agent.RSSMaxMB, 44},
		{"containerd cpu", w.Containerd.CPUPercent, 2},
		{"containerd rss mean", w.Containerd.RSSMeanMB, 30},
		{"shims cpu", w.Shims.CPUPercent, 0.6},
		{"shims rss mean", w.Shims.RSSMeanMB, 82.0 / 3},
		{"shims rss max", w.Shims.RSSMaxMB, 30},
		{"children cpu", w.ChildrenCPUPercent, 11},
		{"total cpu", w.Total.CPUPercent, 14.6},
		{"total rss max", w.Total.RSSMaxMB, 104},
		{"total rss mean", w.Total.RSSMeanMB, 300.0 / 3}, // the pause processes 2 MB in the first
		// PSS only in the first sample: agent 39, shims 2 + 3 + 4.
		{"shims pss max", w.Shims.PSSMaxMB, 9},
		{"agent pss max", w.Agent.PSSMaxMB, 39},
		{"total pss max", w.Total.PSSMaxMB, 50},
		{"pause pss max", w.Pause.PSSMaxMB, 2},
		{"pause rss max", w.Pause.RSSMaxMB, 2},
		{"pause count", float64(w.PauseCount), 0},
		{"shim count", float64(w.ShimCount), 3},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if _, err := SummarizeNode(samples[:1]); err == nil {
		t.Error("SummarizeNode of one sample: want error")
	}
	back := slices.Clone(samples)
	back[2].Containerd.CPUTicks = 1
	if _, err := SummarizeNode(back); err == nil {
		t.Error("containerd's ticks went back: want error")
	}
}
