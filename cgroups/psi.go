package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	libcg "github.com/opencontainers/cgroups"
)

// Pressure is the pressure-stall information (PSI) of a cgroup or of the
// machine: the kernel's cpu, memory and io.pressure files; nil where the
// kernel has none. Totals are the kernel's microseconds, as the kubelet
// reports them.
type Pressure struct {
	CPU, Memory, IO *libcg.PSIStats
}

// readPressure reads dir's cpu.pressure, memory.pressure and io.pressure
// (a cgroup v2 directory, or /proc/pressure with the names cpu, memory,
// io: suffix ""). A file that is missing or unreadable leaves its field
// nil: PSI is optional, as in cAdvisor.
func readPressure(dir, suffix string) Pressure {
	read := func(name string) *libcg.PSIStats {
		p, err := parsePSIFile(filepath.Join(dir, name+suffix))
		if err != nil {
			return nil
		}
		return p
	}
	return Pressure{CPU: read("cpu"), Memory: read("memory"), IO: read("io")}
}

// MachinePressure is the machine's PSI (/proc/pressure), which the
// kubelet reports for the node on cgroup v2 (the root cgroup's).
func MachinePressure() Pressure { return readPressure("/proc/pressure", "") }

// parsePSIFile parses a PSI file ("some avg10=0.00 avg60=0.00 avg300=0.00
// total=0" and a "full" line). It is opencontainers/cgroups' fs2 parser,
// which the library does not export (its GetStats reads every
// controller's files, which skiff avoids: see usage).
func parsePSIFile(path string) (*libcg.PSIStats, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st libcg.PSIStats
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		var d *libcg.PSIData
		switch fields[0] {
		case "some":
			d = &st.Some
		case "full":
			d = &st.Full
		default:
			continue
		}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return nil, fmt.Errorf("%s: invalid PSI field %q", path, f)
			}
			if err := setPSI(d, k, v); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return &st, sc.Err()
}

func setPSI(d *libcg.PSIData, key, val string) error {
	if key == "total" {
		n, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return fmt.Errorf("invalid PSI total: %w", err)
		}
		d.Total = n
		return nil
	}
	f, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return fmt.Errorf("invalid PSI %s: %w", key, err)
	}
	switch key {
	case "avg10":
		d.Avg10 = f
	case "avg60":
		d.Avg60 = f
	case "avg300":
		d.Avg300 = f
	default:
		return errors.New("unknown PSI field " + key)
	}
	return nil
}
