package nodestatus

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// TestSystemInfo_H8: the nodeInfo's machine part from the host's files,
// with the fallbacks (dbus machine ID, no DMI UUID, "Linux" image).
func TestSystemInfo_H8(t *testing.T) {
	full := fstest.MapFS{
		"etc/machine-id":                 {Data: []byte("0123abcd\n")},
		"proc/sys/kernel/random/boot_id": {Data: []byte("b00t-1d\n")},
		"proc/sys/kernel/osrelease":      {Data: []byte("6.1.0-40-amd64\n")},
		"sys/class/dmi/id/product_uuid":  {Data: []byte("4c4c4544-0000\n")},
		"etc/os-release":                 {Data: []byte("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n")},
	}
	info, err := SystemInfo(full)
	if err != nil {
		t.Fatal(err)
	}
	if info.MachineID != "0123abcd" || info.BootID != "b00t-1d" || info.KernelVersion != "6.1.0-40-amd64" ||
		info.SystemUUID != "4c4c4544-0000" || info.OSImage != "Debian GNU/Linux 12 (bookworm)" ||
		info.OperatingSystem != runtime.GOOS || info.Architecture != runtime.GOARCH {
		t.Errorf("info %+v", info)
	}

	minimal := fstest.MapFS{
		"var/lib/dbus/machine-id":        {Data: []byte("dbus-id\n")},
		"proc/sys/kernel/random/boot_id": {Data: []byte("b")},
		"proc/sys/kernel/osrelease":      {Data: []byte("6.1")},
	}
	info, err = SystemInfo(minimal)
	if err != nil {
		t.Fatal(err)
	}
	if info.MachineID != "dbus-id" || info.SystemUUID != "" || info.OSImage != "Linux" {
		t.Errorf("fallbacks: %+v", info)
	}

	delete(minimal, "var/lib/dbus/machine-id")
	if _, err := SystemInfo(minimal); err == nil || !strings.Contains(err.Error(), "machine ID") {
		t.Errorf("no machine ID: %v", err)
	}
}

// TestSystemInfoThisHost reads this machine's files: the IDs this node
// would report are there.
func TestSystemInfoThisHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	info, err := SystemInfo(os.DirFS("/"))
	if err != nil {
		t.Skipf("this host lacks a file the kubelet reads too: %v", err)
	}
	if info.BootID == "" || info.KernelVersion == "" {
		t.Errorf("info %+v", info)
	}
}
