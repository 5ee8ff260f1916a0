package nodestatus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// SystemInfo reads the machine part of a nodeInfo (H.8) from root, the
// host's file system (os.DirFS("/") in production), as the kubelet's
// cAdvisor does: the machine ID (/etc/machine-id, else
// /var/lib/dbus/machine-id), the system UUID (DMI product_uuid; empty
// where there is none, e.g. in many VMs and containers), the boot ID, the
// kernel release and the OS image (PRETTY_NAME of /etc/os-release, else
// "Linux"), with GOOS and GOARCH. The caller adds the runtime and kubelet
// versions. Blocking (file reads); safe for concurrent use.
func SystemInfo(root fs.FS) (v1.NodeSystemInfo, error) {
	info := v1.NodeSystemInfo{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH, OSImage: "Linux"}
	var err error
	if info.MachineID, err = firstLine(root, "etc/machine-id", "var/lib/dbus/machine-id"); err != nil {
		return info, fmt.Errorf("machine ID: %w", err)
	}
	if info.BootID, err = firstLine(root, "proc/sys/kernel/random/boot_id"); err != nil {
		return info, fmt.Errorf("boot ID: %w", err)
	}
	if info.KernelVersion, err = firstLine(root, "proc/sys/kernel/osrelease"); err != nil {
		return info, fmt.Errorf("kernel version: %w", err)
	}
	// Readable by root only, and absent on many VMs: best effort, as
	// cAdvisor's.
	info.SystemUUID, _ = firstLine(root, "sys/class/dmi/id/product_uuid")
	if b, err := fs.ReadFile(root, "etc/os-release"); err == nil {
		if name := osReleaseValue(b, "PRETTY_NAME"); name != "" {
			info.OSImage = name
		}
	}
	return info, nil
}

// firstLine returns the trimmed content of the first of paths that
// exists.
func firstLine(root fs.FS, paths ...string) (string, error) {
	var errs []error
	for _, p := range paths {
		b, err := fs.ReadFile(root, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", errors.Join(errs...)
}

// osReleaseValue returns key's value in an os-release file, unquoted.
func osReleaseValue(b []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k != key {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return strings.Trim(v, `'"`)
	}
	return ""
}
