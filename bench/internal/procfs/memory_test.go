package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

// statusOf is a /proc/<pid>/status as Linux 5.x writes it, with the given
// VmRSS, RssAnon, RssFile and RssShmem lines.
func statusOf(rss, anon, file, shmem string) string {
	return "Name:\tskiff-apiserver\nState:\tS (sleeping)\nVmPeak:\t 2000000 kB\nVmHWM:\t  150000 kB\n" +
		rss + anon + file + shmem + "VmData:\t  300000 kB\nThreads:\t21\n"
}

func TestParseMemory(t *testing.T) {
	const (
		rss   = "VmRSS:\t  141600 kB\n"
		anon  = "RssAnon:\t  112000 kB\n"
		file  = "RssFile:\t   29000 kB\n"
		shmem = "RssShmem:\t     600 kB\n"
	)
	tests := []struct {
		name    string
		data    string
		want    Memory
		wantErr bool
	}{
		{"all four", statusOf(rss, anon, file, shmem), Memory{141600 * 1024, 112000 * 1024, 29000 * 1024, 600 * 1024}, false},
		{"no shmem", statusOf(rss, anon, file, "RssShmem:\t0 kB\n"), Memory{141600 * 1024, 112000 * 1024, 29000 * 1024, 0}, false},
		{"zombie", "Name:\tskiff-apiserver\nState:\tZ (zombie)\n", Memory{}, true},
		{"kernel before 4.5", statusOf(rss, "", "", ""), Memory{}, true},
		{"bad unit", statusOf(rss, "RssAnon:\t112 MB\n", file, shmem), Memory{}, true},
		{"bad number", statusOf(rss, anon, "RssFile:\tx kB\n", shmem), Memory{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMemory(tt.data)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseMemory = %+v, %v; want %+v, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestMemoryMB(t *testing.T) {
	got := Memory{RSSBytes: 145e6, AnonBytes: 120e6, FileBytes: 24_500_000, ShmemBytes: 500_000}.MB()
	if want := (MemoryMB{RSSMB: 145, AnonMB: 120, FileMB: 24.5, ShmemMB: 0.5}); got != want {
		t.Errorf("MB = %+v, want %+v", got, want)
	}
}

func TestReadMemory(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "42"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "42", "status"),
		[]byte(statusOf("VmRSS:\t 300 kB\n", "RssAnon:\t 200 kB\n", "RssFile:\t 100 kB\n", "RssShmem:\t 0 kB\n")), 0o644))
	got, err := ReadMemory(root, 42)
	if want := (Memory{300 * 1024, 200 * 1024, 100 * 1024, 0}); err != nil || got != want {
		t.Errorf("ReadMemory = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ReadMemory(root, 43); err == nil {
		t.Error("ReadMemory of a missing process: want error")
	}
	self, err := ReadMemory("/proc", os.Getpid())
	if err != nil || self.RSSBytes == 0 || self.AnonBytes == 0 {
		t.Errorf("own memory = %+v, %v; want RSS and anon", self, err)
	}
}
