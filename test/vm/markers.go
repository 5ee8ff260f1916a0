package vm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// BootInfo is what the guest's boot marker says about it.
type BootInfo struct {
	// Uptime is the guest kernel's uptime in seconds when it was ready.
	Uptime float64
	// CgroupFS is the file system on /sys/fs/cgroup ("cgroup2fs" on v2).
	CgroupFS string
	// Controllers are the root's cgroup.subtree_control entries.
	Controllers []string
	// State is `systemctl is-system-running` after the boot and PID1 the
	// name of process 1 (systemd VM only, see RunSystemd).
	State, PID1 string
}

// bootFieldRE matches key=value and key="quoted value" fields.
var bootFieldRE = regexp.MustCompile(`(\w+)=("([^"]*)"|\S*)`)

// ParseBootFields parses the fields after the nonce of a BOOTED marker
// (uptime=... cgroupfs=... controllers="..."); unknown fields are ignored.
func ParseBootFields(s string) (BootInfo, error) {
	var b BootInfo
	for _, m := range bootFieldRE.FindAllStringSubmatch(s, -1) {
		val := m[2]
		if strings.HasPrefix(val, `"`) {
			val = m[3]
		}
		switch m[1] {
		case "uptime":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return b, fmt.Errorf("boot marker: uptime %q: %w", val, err)
			}
			b.Uptime = f
		case "cgroupfs":
			b.CgroupFS = val
		case "controllers":
			b.Controllers = strings.Fields(val)
		case "state":
			b.State = val
		case "pid1":
			b.PID1 = val
		}
	}
	return b, nil
}

// String renders b for logs.
func (b BootInfo) String() string {
	s := fmt.Sprintf("kernel ready after %.1fs, /sys/fs/cgroup is %s, controllers %q",
		b.Uptime, b.CgroupFS, strings.Join(b.Controllers, " "))
	if b.State != "" {
		s += fmt.Sprintf(", PID 1 %s, system %s", b.PID1, b.State)
	}
	return s
}

// RequireCgroup2 fails unless /sys/fs/cgroup is cgroup2fs with every one
// of controllers enabled for the root's children.
func (b BootInfo) RequireCgroup2(controllers []string) error {
	if b.CgroupFS != "cgroup2fs" {
		return fmt.Errorf("guest /sys/fs/cgroup is %q, want cgroup2fs", b.CgroupFS)
	}
	have := map[string]bool{}
	for _, c := range b.Controllers {
		have[c] = true
	}
	var missing []string
	for _, c := range controllers {
		if c = strings.TrimSpace(c); c != "" && !have[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("guest cgroup.subtree_control %q lacks %s", strings.Join(b.Controllers, " "), strings.Join(missing, " "))
	}
	return nil
}
