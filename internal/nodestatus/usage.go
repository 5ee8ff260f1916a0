package nodestatus

import (
	"bufio"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Usage is the whole machine's cpu and memory use, as the kubelet's
// summary API reports it for the node (cAdvisor's root container).
type Usage struct {
	// CPUUsageNanoSeconds is the cpu time all cores spent outside idle
	// and iowait since boot.
	CPUUsageNanoSeconds uint64
	// MemoryUsageBytes is MemTotal - MemFree; WorkingSetBytes that less
	// the inactive file pages, which the kernel reclaims first (cAdvisor's
	// working set).
	MemoryUsageBytes, WorkingSetBytes uint64
}

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture Kubernetes runs on.
const userHZ = 100

// ReadUsage reads the machine's usage from proc/stat and proc/meminfo
// under root (os.DirFS("/") on a node). Pure apart from the reads.
func ReadUsage(root fs.FS) (Usage, error) {
	var u Usage
	cpu, err := readCPU(root)
	if err != nil {
		return u, err
	}
	mem, err := readMeminfo(root)
	if err != nil {
		return u, err
	}
	u.CPUUsageNanoSeconds = cpu
	total, free, inactive := mem["MemTotal"], mem["MemFree"], mem["Inactive(file)"]
	if total == 0 {
		return u, fmt.Errorf("proc/meminfo: no MemTotal")
	}
	u.MemoryUsageBytes = total - min(free, total)
	u.WorkingSetBytes = u.MemoryUsageBytes - min(inactive, u.MemoryUsageBytes)
	return u, nil
}

// readCPU sums the busy fields of proc/stat's "cpu" line (user, nice,
// system, irq, softirq, steal; guest time is already in user and nice).
func readCPU(root fs.FS) (uint64, error) {
	f, err := root.Open("proc/stat")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || fields[0] != "cpu" {
			continue
		}
		var busy uint64
		for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system _idle _iowait irq softirq steal
			v, err := strconv.ParseUint(fields[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("proc/stat: cpu field %d: %w", i, err)
			}
			busy += v
		}
		return busy * (1e9 / userHZ), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("proc/stat: %w", err)
	}
	return 0, fmt.Errorf("proc/stat: no cpu line")
}

// readMeminfo returns proc/meminfo's values in bytes.
func readMeminfo(root fs.FS) (map[string]uint64, error) {
	f, err := root.Open("proc/meminfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		out[key] = v
	}
	return out, sc.Err()
}
