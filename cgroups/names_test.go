package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNames(t *testing.T) {
	tests := []struct {
		name              Name
		cgroupfs, systemd string
	}{
		{Name{}, "/", "/"},
		{Name{"kubepods"}, "/kubepods", "/kubepods.slice"},
		{Name{"kubepods", "burstable"}, "/kubepods/burstable", "/kubepods.slice/kubepods-burstable.slice"},
		{Name{"kubepods", "burstable", "pod12-34"}, "/kubepods/burstable/pod12-34",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice"},
		{Name{"kubepods", "pod12-34"}, "/kubepods/pod12-34", "/kubepods.slice/kubepods-pod12_34.slice"},
	}
	for _, tt := range tests {
		if got := tt.name.ToCgroupfs(); got != tt.cgroupfs {
			t.Errorf("%v.ToCgroupfs() = %q, want %q", tt.name, got, tt.cgroupfs)
		}
		if got := tt.name.ToSystemd(); got != tt.systemd {
			t.Errorf("%v.ToSystemd() = %q, want %q", tt.name, got, tt.systemd)
		}
	}
}

func TestParseRootAndPodNames(t *testing.T) {
	tests := []struct {
		driver      Driver
		root        string
		qos         v1.PodQOSClass
		wantParent  string
		wantPodPath string
	}{
		{DriverCgroupfs, "/", v1.PodQOSBurstable, "/kubepods/burstable/podaa-bb", "/kubepods/burstable/podaa-bb"},
		{DriverCgroupfs, "/skiff-e2e/x/", v1.PodQOSBestEffort, "/skiff-e2e/x/kubepods/besteffort/podaa-bb", "/skiff-e2e/x/kubepods/besteffort/podaa-bb"},
		{DriverCgroupfs, "", v1.PodQOSGuaranteed, "/kubepods/podaa-bb", "/kubepods/podaa-bb"},
		{DriverSystemd, "/", v1.PodQOSBurstable, "kubepods-burstable-podaa_bb.slice",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podaa_bb.slice"},
		{DriverSystemd, "skiff.slice", v1.PodQOSGuaranteed, "skiff-kubepods-podaa_bb.slice",
			"/skiff.slice/skiff-kubepods.slice/skiff-kubepods-podaa_bb.slice"},
	}
	for _, tt := range tests {
		m := &Manager{driver: tt.driver, kubepods: parseRoot(tt.root, tt.driver).Child("kubepods")}
		pod := podOf(nil, ctr("a", "", "", "", ""))
		pod.UID = "aa-bb"
		switch tt.qos {
		case v1.PodQOSBurstable:
			pod.Spec.Containers[0] = ctr("a", "100m", "", "", "")
		case v1.PodQOSGuaranteed:
			pod.Spec.Containers[0] = ctr("a", "1", "1Gi", "1", "1Gi")
		}
		if got := m.CgroupParent(pod); got != tt.wantParent {
			t.Errorf("%s root %q: CgroupParent = %q, want %q", tt.driver, tt.root, got, tt.wantParent)
		}
		if got := m.relPath(m.PodName(pod.UID, tt.qos)); got != tt.wantPodPath {
			t.Errorf("%s root %q: pod path = %q, want %q", tt.driver, tt.root, got, tt.wantPodPath)
		}
		dir := tt.wantPodPath[len(tt.wantPodPath)-len(tt.wantParent):]
		if tt.driver == DriverCgroupfs {
			dir = "podaa-bb"
		}
		if uid, ok := uidFromDir(dir, tt.driver); !ok || uid != types.UID("aa-bb") {
			t.Errorf("%s: uidFromDir(%q) = %q, %v", tt.driver, dir, uid, ok)
		}
	}
	for _, bad := range []string{"burstable", "besteffort", "kubepods-burstable.slice", "pod", "cpu.shares"} {
		for _, d := range []Driver{DriverCgroupfs, DriverSystemd} {
			if uid, ok := uidFromDir(bad, d); ok {
				t.Errorf("%s: uidFromDir(%q) = %q, want no pod", d, bad, uid)
			}
		}
	}
}

func TestParseDriver(t *testing.T) {
	for _, s := range []string{"cgroupfs", "systemd"} {
		if _, err := ParseDriver(s); err != nil {
			t.Errorf("ParseDriver(%q): %v", s, err)
		}
	}
	if _, err := ParseDriver("cgroupsfs"); err == nil {
		t.Error("ParseDriver(cgroupsfs): want an error")
	}
}
