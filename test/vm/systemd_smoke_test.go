package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireSystemdVM skips unless SKIFF_VM_SYSTEMD=1: the systemd VM needs
// qemu, the cloud kernel and, for its first run on a machine, root and
// debootstrap (test/setup.sh) to build its cached root.
func requireSystemdVM(t *testing.T) {
	t.Helper()
	if os.Getenv("SKIFF_VM_SYSTEMD") != "1" {
		t.Skip("set SKIFF_VM_SYSTEMD=1 to boot the systemd test VM (make test-systemd; first run builds its root as root: test/setup.sh)")
	}
}

// runSystemdVM boots the systemd VM with opts, logs the timings and fails
// unless the command exited with status 0 and the guest powered off; the
// console log is printed on failure, and returned.
func runSystemdVM(t *testing.T, opts SystemdOptions) (*Result, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "console.log")
	opts.Machine.Log = log
	opts.Logf = t.Logf
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.Machine.PowerOffGrace == 0 {
		opts.Machine.PowerOffGrace = time.Minute
	}
	res, tm, err := RunSystemd(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("disks %s (root build %s), boot %s, command %s, power-off %s; %s",
		tm.Build.Round(time.Millisecond), tm.Root.Round(time.Second), tm.Boot.Round(time.Millisecond),
		(res.Finished - res.Booted).Round(time.Millisecond), (res.Total - res.Finished).Round(time.Millisecond), res.Boot)
	console, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if res.RC != 0 || res.Reason != "" {
		t.Fatalf("guest command: rc %d reason %q, want 0; console:\n%s", res.RC, res.Reason, console)
	}
	if res.PowerOffKilled {
		t.Fatalf("the guest did not power off within %s of its result; console:\n%s", opts.Machine.PowerOffGrace, console)
	}
	return res, string(console)
}

// systemdSmokeScript checks what the skiff unit tests rely on: systemd as
// PID 1 on cgroup v2, a finished boot, D-Bus and logind (graceful node
// shutdown takes logind inhibitor locks over D-Bus), and a Type=notify
// service that is active only once it sent READY=1 (and fails when it
// never does).
const systemdSmokeScript = `set -u
fail() { echo "FAIL: $*"; exit 1; }
[ "$(cat /proc/1/comm)" = systemd ] || fail "PID 1 is $(cat /proc/1/comm)"
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || fail "/sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup)"
state=$(systemctl is-system-running)
case "$state" in running|degraded) ;; *) fail "system is $state" ;; esac
systemctl is-active --quiet dbus.service || fail "dbus.service is not active"
systemctl is-active --quiet systemd-logind.service || fail "systemd-logind.service is not active"
busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager ListInhibitors >/dev/null ||
	fail "logind's ListInhibitors over D-Bus failed"

cat >/run/systemd/system/notify-ready.service <<'EOF'
[Service]
Type=notify
NotifyAccess=all
ExecStart=/bin/sh -c 'sleep 3; systemd-notify --ready; exec sleep infinity'
EOF
cat >/run/systemd/system/notify-never.service <<'EOF'
[Service]
Type=notify
TimeoutStartSec=5
ExecStart=/bin/sleep infinity
EOF
systemctl daemon-reload
systemctl start notify-ready.service || fail "notify-ready.service did not start"
[ "$(systemctl is-active notify-ready.service)" = active ] || fail "notify-ready.service is $(systemctl is-active notify-ready.service)"
started=$(systemctl show -P ExecMainStartTimestampMonotonic notify-ready.service)
active=$(systemctl show -P ActiveEnterTimestampMonotonic notify-ready.service)
[ $((active - started)) -ge 3000000 ] || fail "notify-ready.service active $((active - started))us after its start, before READY=1"
systemctl start notify-never.service && fail "notify-never.service became active without READY=1"
[ "$(systemctl show -P Result notify-never.service)" = timeout ] ||
	fail "notify-never.service result $(systemctl show -P Result notify-never.service), want timeout"
echo "systemd smoke: PASS"
`

// TestSystemdVMSmoke boots the systemd VM once (about 40 s after the root
// is cached) and checks the harness the skiff.service tests build on.
func TestSystemdVMSmoke(t *testing.T) {
	requireSystemdVM(t)
	res, _ := runSystemdVM(t, SystemdOptions{Command: []string{"sh", "-c", systemdSmokeScript}})
	if res.Boot.PID1 != "systemd" || res.Boot.CgroupFS != "cgroup2fs" {
		t.Errorf("boot marker: %s, want PID 1 systemd on cgroup2fs", res.Boot)
	}
	if s := res.Boot.State; s != "running" && s != "degraded" {
		t.Errorf("system state %q after boot, want running or degraded", s)
	}
}

// TestSystemdVMPowerOffAndPersistentDisk boots twice from one root disk:
// the first boot starts a unit whose ExecStop writes a file and ends with
// the runner's `systemctl poweroff`; the second finds the file. This is
// the shape of the graceful-node-shutdown test (a pod writes a marker to a
// hostPath volume while the machine powers off; the next boot checks it).
func TestSystemdVMPowerOffAndPersistentDisk(t *testing.T) {
	requireSystemdVM(t)
	disk := filepath.Join(t.TempDir(), "root.img")
	unit := filepath.Join(t.TempDir(), "stop-marker.service")
	err := os.WriteFile(unit, []byte(`[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'echo stopped-at-poweroff >/var/lib/stop-marker'
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	runSystemdVM(t, SystemdOptions{
		Disk:    disk,
		Adds:    []Add{{Host: unit, Guest: "/etc/systemd/system/stop-marker.service"}},
		Command: []string{"sh", "-c", "rm -f /var/lib/stop-marker && systemctl start stop-marker.service"},
	})
	_, console := runSystemdVM(t, SystemdOptions{
		Disk:    disk,
		Command: []string{"sh", "-c", `m=$(cat /var/lib/stop-marker) && echo "marker: $m" && [ "$m" = stopped-at-poweroff ]`},
	})
	if !strings.Contains(console, "marker: stopped-at-poweroff") {
		t.Errorf("second boot did not print the marker; console:\n%s", console)
	}
}
