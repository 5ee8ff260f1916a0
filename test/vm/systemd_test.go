package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSystemdRootKey(t *testing.T) {
	k := Kernel{Version: "6.1.0-9-cloud-amd64"}
	base, err := SystemdRootKey(SystemdRoot{}, k)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root SystemdRoot
		k    Kernel
		same bool
	}{
		{"defaults spelled out", SystemdRoot{Suite: "bookworm", Mirror: DefaultMirror, Packages: DefaultSystemdPackages}, k, true},
		{"other suite", SystemdRoot{Suite: "trixie"}, k, false},
		{"other mirror: same packages", SystemdRoot{Mirror: "http://mirror.example/debian"}, k, true},
		{"other packages", SystemdRoot{Packages: []string{"systemd"}}, k, false},
		{"other kernel", SystemdRoot{}, Kernel{Version: "6.1.0-10-cloud-amd64"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SystemdRootKey(tt.root, tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if (got == base) != tt.same {
				t.Errorf("key %s vs default %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
}

func TestSystemdRecipeFiles(t *testing.T) {
	files, err := systemdRecipeFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{
		systemdBuildName: 0o755,
		"overlay/etc/systemd/system/skiff-vm-test.service": 0o644,
		"overlay/usr/local/lib/skiff-vm/run":               0o755,
		"overlay/usr/local/lib/skiff-vm/net":               0o755,
	} {
		if _, ok := files[name]; !ok {
			t.Errorf("recipe lacks %s", name)
		}
		if got := recipeMode(name); got != mode {
			t.Errorf("recipeMode(%s) = %o, want %o", name, got, mode)
		}
	}
}

func TestMachineArgsDisks(t *testing.T) {
	m := Machine{
		Kernel: "/k", Cmdline: []string{"root=/dev/nvme0n1"}, Append: []string{"x=1"},
		Disks: []Disk{{File: "/c/root.img", Snapshot: true}, {File: "/w,odd/data.img"}},
	}.withDefaults()
	args := strings.Join(m.args(), " ")
	for _, want := range []string{
		"-append root=/dev/nvme0n1 x=1",
		"-device nvme,id=nvme0,serial=skiffvm",
		"-drive file=/c/root.img,if=none,id=disk0,format=raw,cache=unsafe,snapshot=on -device nvme-ns,drive=disk0,bus=nvme0,nsid=1",
		"-drive file=/w,,odd/data.img,if=none,id=disk1,format=raw,cache=unsafe -device nvme-ns,drive=disk1,bus=nvme0,nsid=2",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu args lack %q:\n%s", want, args)
		}
	}
	if strings.Contains(args, "-initrd") || strings.Contains(args, "rdinit") {
		t.Errorf("qemu args have an initrd without Initrd:\n%s", args)
	}
}

func TestWriteDataDisk(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 missing (e2fsprogs)")
	}
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	writeFiles(t, host, map[string]string{"bin/tool": "#!/bin/sh\n", "etc/unit.service": "[Service]\n"})
	if err := os.Chmod(filepath.Join(host, "bin/tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := SystemdOptions{
		Command: []string{"sh", "-c", "echo 'hi'"}, Env: []string{"A=b c"},
		Adds:           []Add{{Host: filepath.Join(host, "bin"), Guest: "/usr/local/bin"}, {Host: filepath.Join(host, "etc/unit.service"), Guest: "/etc/systemd/system/u.service"}},
		CommandTimeout: 90 * time.Second,
	}.withDefaults()
	stage := filepath.Join(dir, "stage")
	if err := writeDataDisk(t.Context(), filepath.Join(dir, "data.img"), stage, opts, "n0nce"); err != nil {
		t.Fatal(err)
	}
	config, _ := os.ReadFile(filepath.Join(stage, "config"))
	if want := "VMRUN_NONCE='n0nce'\nVMRUN_TIMEOUT=90\nVMRUN_POWEROFF=systemctl\n"; string(config) != want {
		t.Errorf("config %q, want %q", config, want)
	}
	run, _ := os.ReadFile(filepath.Join(stage, "run.sh"))
	if !strings.Contains(string(run), "export A='b c'\nexec 'sh' '-c' 'echo '\\''hi'\\'''") {
		t.Errorf("run.sh:\n%s", run)
	}
	// A later Add of the same guest path wins, and the earlier host file
	// stays as it was (the staged file may be a hard link to it).
	over := opts
	over.Adds = append(over.Adds, Add{Host: filepath.Join(host, "bin/tool"), Guest: "/etc/systemd/system/u.service"})
	if err := writeDataDisk(t.Context(), filepath.Join(dir, "data.img"), stage, over, "n0nce"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(stage, "root/etc/systemd/system/u.service")); string(got) != "#!/bin/sh\n" {
		t.Errorf("u.service after a second Add: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(host, "etc/unit.service")); string(got) != "[Service]\n" {
		t.Errorf("the first Add's host file became %q", got)
	}
	fi, err := os.Stat(filepath.Join(stage, "root/usr/local/bin/tool"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("added tool: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(stage, "root/etc/systemd/system/u.service")); err != nil {
		t.Error(err)
	}
	out, err := exec.Command("dumpe2fs", "-h", filepath.Join(dir, "data.img")).CombinedOutput()
	if err == nil && !strings.Contains(string(out), "skiffvm-data") {
		t.Errorf("data disk label: %s", out)
	}

	bad := opts
	bad.PowerOff = "reboot"
	if err := writeDataDisk(t.Context(), filepath.Join(dir, "bad.img"), stage, bad, "n"); err == nil || !strings.Contains(err.Error(), "power-off") {
		t.Errorf("power-off reboot: error %v, want one naming the power-off", err)
	}
}

func TestParseBootFieldsSystemd(t *testing.T) {
	b, err := ParseBootFields(`uptime=33.04 state=degraded pid1=systemd cgroupfs=cgroup2fs controllers="memory pids"`)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != "degraded" || b.PID1 != "systemd" || !slices.Equal(b.Controllers, []string{"memory", "pids"}) {
		t.Errorf("parsed %+v", b)
	}
}
