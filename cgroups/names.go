package cgroups

import (
	"fmt"
	"path"
	"strings"

	"github.com/opencontainers/cgroups/systemd"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Driver is the cgroup driver: who creates cgroups and how they are named.
// The CRI runtime must use the same one.
type Driver string

// Cgroup drivers, named as the kubelet's --cgroup-driver values.
const (
	DriverCgroupfs Driver = "cgroupfs"
	DriverSystemd  Driver = "systemd"
)

// ParseDriver checks a --cgroup-driver value.
func ParseDriver(s string) (Driver, error) {
	switch d := Driver(s); d {
	case DriverCgroupfs, DriverSystemd:
		return d, nil
	}
	return "", fmt.Errorf("cgroup driver %q: want %q or %q", s, DriverCgroupfs, DriverSystemd)
}

// Name is a cgroup name independent of the driver, as the kubelet's
// CgroupName: {"kubepods", "burstable", "pod<uid>"}.
type Name []string

const systemdSuffix = ".slice"

// Child returns n with components appended (n is not changed).
func (n Name) Child(components ...string) Name {
	out := make(Name, 0, len(n)+len(components))
	return append(append(out, n...), components...)
}

// ToCgroupfs is the cgroupfs path, e.g. "/kubepods/burstable/pod1234".
func (n Name) ToCgroupfs() string { return "/" + path.Join(n...) }

// ToSystemd is the expanded systemd path, e.g.
// "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice":
// each component's "-" becomes "_" (systemd's slice separator is "-").
func (n Name) ToSystemd() string {
	if len(n) == 0 || (len(n) == 1 && n[0] == "") {
		return "/"
	}
	parts := make([]string, len(n))
	for i, p := range n {
		parts[i] = strings.ReplaceAll(p, "-", "_")
	}
	out, err := systemd.ExpandSlice(strings.Join(parts, "-") + systemdSuffix)
	if err != nil {
		// Only for names holding "/" or ending in "-", which skiff never builds.
		return "/" + strings.Join(parts, "-") + systemdSuffix
	}
	return out
}

// parseRoot turns a --cgroup-root value into a Name: a cgroupfs path
// ("/", "/skiff") or, for systemd, a slice ("skiff.slice").
func parseRoot(root string, d Driver) Name {
	if d == DriverSystemd && strings.HasSuffix(root, systemdSuffix) {
		base := strings.TrimSuffix(path.Base(root), systemdSuffix)
		var out Name
		for _, p := range strings.Split(base, "-") {
			if p != "" {
				out = append(out, strings.ReplaceAll(p, "_", "-"))
			}
		}
		return out
	}
	var out Name
	for _, p := range strings.Split(strings.Trim(root, "/"), "/") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// podPrefix is the name of a pod cgroup without the UID.
const podPrefix = "pod"

// qosName is the QoS parent of a class under kubepods (Guaranteed: kubepods).
func qosName(kubepods Name, qos v1.PodQOSClass) Name {
	switch qos {
	case v1.PodQOSBurstable:
		return kubepods.Child("burstable")
	case v1.PodQOSBestEffort:
		return kubepods.Child("besteffort")
	}
	return kubepods
}

// uidFromDir parses the UID from a pod cgroup directory name: "pod<uid>"
// (cgroupfs) or "kubepods-burstable-pod<uid with _>.slice" (systemd).
func uidFromDir(dir string, d Driver) (types.UID, bool) {
	if d == DriverSystemd {
		base, ok := strings.CutSuffix(dir, systemdSuffix)
		if !ok {
			return "", false
		}
		i := strings.LastIndex(base, "-")
		uid, ok := strings.CutPrefix(base[i+1:], podPrefix)
		if !ok || uid == "" {
			return "", false
		}
		return types.UID(strings.ReplaceAll(uid, "_", "-")), true
	}
	uid, ok := strings.CutPrefix(dir, podPrefix)
	if !ok || uid == "" {
		return "", false
	}
	return types.UID(uid), true
}
