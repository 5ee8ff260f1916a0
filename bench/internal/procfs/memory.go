package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Memory is a process's resident memory by kind, in bytes, as
// /proc/<pid>/status gives it: RSS (VmRSS) is Anon (RssAnon: heap, stacks,
// private mappings) + File (RssFile: the executable and other mapped
// files) + Shmem (RssShmem: shared memory, tmpfs), each rounded by the
// kernel, so the sum may differ from RSS by a few pages.
type Memory struct {
	RSSBytes   uint64
	AnonBytes  uint64
	FileBytes  uint64
	ShmemBytes uint64
}

// MemoryMB is Memory in MB (10^6 bytes), as the report keeps it.
type MemoryMB struct {
	RSSMB   float64 `json:"rss_mb"`
	AnonMB  float64 `json:"rss_anon_mb"`
	FileMB  float64 `json:"rss_file_mb"`
	ShmemMB float64 `json:"rss_shmem_mb"`
}

// MB is m in MB (10^6 bytes).
func (m Memory) MB() MemoryMB {
	return MemoryMB{RSSMB: float64(m.RSSBytes) / 1e6, AnonMB: float64(m.AnonBytes) / 1e6,
		FileMB: float64(m.FileBytes) / 1e6, ShmemMB: float64(m.ShmemBytes) / 1e6}
}

// ParseMemory returns VmRSS, RssAnon, RssFile and RssShmem from the
// contents of /proc/<pid>/status. Each line must be there ("<n> kB"): a
// zombie has none, and kernels before 4.5 lack the Rss* lines. Pure.
func ParseMemory(data string) (Memory, error) {
	var m Memory
	for _, f := range []struct {
		key string
		dst *uint64
	}{
		{"VmRSS:", &m.RSSBytes}, {"RssAnon:", &m.AnonBytes}, {"RssFile:", &m.FileBytes}, {"RssShmem:", &m.ShmemBytes},
	} {
		v, err := parseKB(data, f.key, "status")
		if err != nil {
			return Memory{}, err
		}
		*f.dst = v
	}
	return m, nil
}

// ReadMemory reads process pid's memory by kind from its status file
// under procRoot (normally "/proc").
func ReadMemory(procRoot string, pid int) (Memory, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return Memory{}, fmt.Errorf("read process %d status: %w", pid, err)
	}
	m, err := ParseMemory(string(data))
	if err != nil {
		return Memory{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return m, nil
}
