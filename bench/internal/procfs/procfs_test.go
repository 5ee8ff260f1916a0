package procfs

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// statLine builds a /proc/<pid>/stat line with the given comm, utime and stime.
func statLine(comm string, utime, stime string) string {
	f := []string{"1234", "(" + comm + ")", "S", "1", "1234", "1234", "0", "-1", "4194560",
		"100", "0", "0", "0", utime, stime, "0", "0", "20", "0", "12", "0", "500"}
	return strings.Join(f, " ") + "\n"
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    uint64
		wantErr bool
	}{
		{"plain", statLine("skiff", "150", "50"), 200, false},
		{"comm with spaces and parens", statLine("a) (b c", "7", "3"), 10, false},
		{"no parens", "1234 skiff S 1", 0, true},
		{"too short", "1 (x) S 1 2 3", 0, true},
		{"bad number", statLine("x", "abc", "1"), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat(tt.data)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseStat = %d, %v; want %d, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    uint64
		wantErr bool
	}{
		{"present", "Name:\tskiff\nVmPeak:\t 9999 kB\nVmRSS:\t   25600 kB\nThreads:\t9\n", 25600 * 1024, false},
		{"missing (zombie)", "Name:\tskiff\nState:\tZ (zombie)\n", 0, true},
		{"bad unit", "VmRSS:\t12 MB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVmRSS(tt.data)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseVmRSS = %d, %v; want %d, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParsePss(t *testing.T) {
	const rollup = "55d0c0000000-7ffd9f3f1000 ---p 00000000 00:00 0  [rollup]\nRss:\t   18000 kB\nPss:\t    1234 kB\nPss_Anon:\t 900 kB\n"
	if got, err := ParsePss(rollup); err != nil || got != 1234*1024 {
		t.Errorf("ParsePss = %d, %v; want %d", got, err, 1234*1024)
	}
	if _, err := ParsePss("Rss:\t1 kB\n"); err == nil {
		t.Error("ParsePss without a Pss line: want error")
	}
}

func TestCPUPercent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		a, b    Sample
		want    float64
		wantErr bool
	}{
		{"half a core", Sample{At: t0, CPUTicks: 100}, Sample{At: t0.Add(10 * time.Second), CPUTicks: 600}, 50, false},
		{"idle", Sample{At: t0, CPUTicks: 7}, Sample{At: t0.Add(time.Minute), CPUTicks: 7}, 0, false},
		{"1.5 cores", Sample{At: t0, CPUTicks: 0}, Sample{At: t0.Add(2 * time.Second), CPUTicks: 300}, 150, false},
		{"same instant", Sample{At: t0}, Sample{At: t0}, 0, true},
		{"ticks went back", Sample{At: t0, CPUTicks: 9}, Sample{At: t0.Add(time.Second), CPUTicks: 1}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CPUPercent(tt.a, tt.b)
			if (err != nil) != tt.wantErr || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("CPUPercent = %v, %v; want %v, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := []Sample{
		{At: t0, CPUTicks: 1000, RSSBytes: 20e6},
		{At: t0.Add(30 * time.Second), CPUTicks: 1030, RSSBytes: 30e6},
		{At: t0.Add(60 * time.Second), CPUTicks: 1060, RSSBytes: 25e6},
	}
	w, err := Summarize(s)
	if err != nil {
		t.Fatal(err)
	}
	// 60 ticks = 0.6 s CPU over 60 s = 1 % of a core.
	want := Window{Seconds: 60, CPUPercent: 1, RSSMeanMB: 25, RSSMaxMB: 30}
	if math.Abs(w.CPUPercent-want.CPUPercent) > 1e-9 || w.Seconds != want.Seconds || w.RSSMeanMB != want.RSSMeanMB || w.RSSMaxMB != want.RSSMaxMB {
		t.Errorf("Summarize = %+v, want %+v", w, want)
	}
	if _, err := Summarize(s[:1]); err == nil {
		t.Error("Summarize of one sample: want error")
	}
}

func TestRead(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "42")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(statLine("skiff", "11", "22")), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "status"), []byte("VmRSS:\t 100 kB\n"), 0o644))
	now := time.Now()
	s, err := Read(root, 42, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUTicks != 33 || s.RSSBytes != 102400 || !s.At.Equal(now) {
		t.Errorf("Read = %+v", s)
	}
	if _, err := Read(root, 43, now); err == nil {
		t.Error("Read of a missing process: want error")
	}
}

func TestReadSelf(t *testing.T) {
	s, err := Read("/proc", os.Getpid(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSBytes == 0 {
		t.Errorf("own RSS is 0: %+v", s)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestShimsOf(t *testing.T) {
	proc := t.TempDir()
	procs := map[string]string{
		"10":   "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-id\x00abc\x00-address\x00/tmp/sb-1/containerd/containerd.sock\x00",
		"11":   "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-id\x00def\x00-address\x00/run/containerd/containerd.sock\x00",
		"12":   "/usr/bin/containerd-shim-runc-v2\x00-address\x00/tmp/sb-10/containerd.sock\x00",
		"13":   "/usr/bin/containerd\x00--address\x00/tmp/sb-1/containerd/containerd.sock\x00",
		"14":   "",
		"self": "/usr/bin/containerd-shim-runc-v2\x00-address\x00/tmp/sb-1/x.sock\x00",
	}
	for pid, cmdline := range procs {
		must(t, os.MkdirAll(filepath.Join(proc, pid), 0o755))
		must(t, os.WriteFile(filepath.Join(proc, pid, "cmdline"), []byte(cmdline), 0o644))
	}
	got, err := ShimsOf(proc, "/tmp/sb-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{10}; !slices.Equal(got, want) {
		t.Errorf("ShimsOf = %v, want %v (only shims whose -address is under the root)", got, want)
	}
}

func TestMountsUnder(t *testing.T) {
	info := strings.Join([]string{
		`22 1 0:21 / /tmp rw - tmpfs tmpfs rw`,
		`30 22 0:50 / /tmp/sb-1/external rw - tmpfs tmpfs rw`,
		`31 30 0:51 / /tmp/sb-1/external/state/run/abc/rootfs rw - overlay overlay rw`,
		`32 30 0:52 / /tmp/sb-1/external/root/sandboxes/x/shm rw - tmpfs shm rw`,
		`33 22 0:53 / /tmp/sb-10/other rw - tmpfs tmpfs rw`,
		`34 22 0:54 / /tmp/sb-1/a\040b rw - tmpfs tmpfs rw`,
		`short line`,
	}, "\n")
	got := MountsUnder(info, "/tmp/sb-1/")
	want := []string{
		"/tmp/sb-1/external/state/run/abc/rootfs",
		"/tmp/sb-1/external/root/sandboxes/x/shm",
		"/tmp/sb-1/external",
		"/tmp/sb-1/a b",
	}
	if !slices.Equal(got, want) {
		t.Errorf("MountsUnder = %q, want %q (deepest first, not /tmp/sb-10, unescaped)", got, want)
	}
	if got := MountsUnder(info, "/tmp/sb-1/external"); len(got) != 2 {
		t.Errorf("MountsUnder(dir) = %q: want only the two below it, not dir itself", got)
	}
}
