package vm

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestVMSmoke boots the real VM (qemu, TCG, the cloud kernel) a few times:
// a command's status comes back, the guest is cgroup v2 with the
// controllers skiff needs, the container runtime's programs run, and the
// guest's watchdog reports a hung command. Only with SKIFF_VM=1 (make test-v2
// sets it); about a minute on 2 cores.
func TestVMSmoke(t *testing.T) {
	if os.Getenv("SKIFF_VM") != "1" {
		t.Skip("set SKIFF_VM=1 to boot the test VM (needs qemu-system-x86 and linux-image-cloud-amd64: test/setup.sh)")
	}
	tests := []struct {
		name       string
		command    []string
		noRuntime  bool
		timeout    time.Duration
		wantRC     int
		wantReason string
	}{
		{
			name: "status and cgroup v2",
			command: []string{"sh", "-c", `test "$(stat -fc %t /sys/fs/cgroup)" = 63677270 || exit 1
				grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || exit 2
				mkdir /sys/fs/cgroup/probe && echo 10 >/sys/fs/cgroup/probe/pids.max || exit 3
				exit 7`},
			noRuntime: true, wantRC: 7,
		},
		{
			name: "runtime programs run",
			command: []string{"sh", "-c", `containerd --version && runc --version && iptables-save >/dev/null &&
				CNI_COMMAND=VERSION /usr/lib/cni/bridge && grep -qw overlay /proc/filesystems && ip link add b0 type bridge`},
			wantRC: 0,
		},
		{
			name:    "guest watchdog",
			command: []string{"sleep", "600"}, noRuntime: true, timeout: 3 * time.Second,
			wantRC: 124, wantReason: "timeout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "console.log")
			opts := Options{
				Image: Image{
					Command: tt.command, NoRuntime: tt.noRuntime, Timeout: tt.timeout,
					Logf: t.Logf,
				},
				Machine: Machine{Log: log},
				Timeout: 5 * time.Minute,
			}
			res, tm, err := Run(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("initramfs %d MiB in %s, boot %s, command %s; %s", tm.InitramfsBytes>>20, tm.Build, tm.Boot, tm.Command, res.Boot)
			if res.RC != tt.wantRC || res.Reason != tt.wantReason {
				console, _ := os.ReadFile(log)
				t.Fatalf("rc %d reason %q, want %d %q; console:\n%s", res.RC, res.Reason, tt.wantRC, tt.wantReason, console)
			}
			if err := res.Boot.RequireCgroup2([]string{"cpu", "memory", "pids", "io"}); err != nil {
				t.Error(err)
			}
		})
	}
}
