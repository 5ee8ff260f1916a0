package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hooks for the skiff.service tests of issue 18 (the unit of
// contrib/systemd, READY=1, restart, watchdog, graceful node shutdown):
// skiffGuest puts bin/skiff with skiff's own runtime, the busybox image, a
// unit and manifests into the systemd VM, and guestShellLib gives the guest script fail and
// wait_pod_running. A test then boots with runSystemdVM:
//
//	runSystemdVM(t, SystemdOptions{
//		Adds:    skiffGuest(t, "../../contrib/systemd/skiff.service", "testdata/vm-sleeper.yaml"),
//		Command: []string{"sh", "-c", guestShellLib + `systemctl start skiff.service; ...`},
//	})

// skiffGuestUnit and skiffGuestManifests are where skiffGuest puts the unit
// and the manifests; testdata/skiff.env, installed as skiffGuestEnv, gives
// the agent --pod-manifest-path skiffGuestManifests, --root-dir
// /var/lib/skiff and --hostname-override skiff-vm in $SKIFF_ARGS (the
// variable contrib/systemd/skiff.service reads from that file).
const (
	skiffGuestUnit      = "/etc/systemd/system/skiff.service"
	skiffGuestEnv       = "/etc/skiff/skiff.env"
	skiffGuestManifests = "/etc/skiff/manifests"
	// skiffGuestRuntime holds skiff's containerd, shim and runc where `make
	// install` puts them: /usr/local/lib/skiff, ../lib/skiff from skiff.
	skiffGuestRuntime = "/usr/local/lib/skiff"
)

// skiffGuest returns the Adds that install skiff in the systemd VM:
// bin/skiff as /usr/local/bin/skiff, the containerd, containerd-shim-runc-v2
// and runc beside it (make runtime) in skiffGuestRuntime, busybox.tar in
// /var/lib/skiff/images/ (imported at start), unit as skiff.service,
// testdata/skiff.env and the manifests. The binary and the images are
// $SKIFF_BIN and $SKIFF_IMAGES, else the repository's bin/skiff (make
// build) and _output/images (make images); a missing one fails the test.
func skiffGuest(t *testing.T, unit string, manifests ...string) []Add {
	t.Helper()
	bin := os.Getenv("SKIFF_BIN")
	if bin == "" {
		bin = "../../bin/skiff"
	}
	images := os.Getenv("SKIFF_IMAGES")
	if images == "" {
		images = "../../_output/images"
	}
	busybox := filepath.Join(images, "busybox.tar")
	adds := []Add{
		{Host: bin, Guest: "/usr/local/bin/skiff"},
		{Host: busybox, Guest: "/var/lib/skiff/images/busybox.tar"},
		{Host: unit, Guest: skiffGuestUnit},
		{Host: "testdata/skiff.env", Guest: skiffGuestEnv},
	}
	for _, name := range runtimePrograms {
		adds = append(adds, Add{Host: filepath.Join(filepath.Dir(bin), name), Guest: skiffGuestRuntime + "/" + name})
	}
	for _, m := range manifests {
		adds = append(adds, Add{Host: m, Guest: skiffGuestManifests + "/" + filepath.Base(m)})
	}
	for _, a := range adds {
		if _, err := os.Stat(a.Host); err != nil {
			t.Fatalf("%v: run make build images (or set SKIFF_BIN and SKIFF_IMAGES)", err)
		}
	}
	return adds
}

// guestShellLib starts a guest script: fail prints its message and the
// tail of skiff's journal and exits 1; wait_pod_running POD SECONDS waits
// until `skiff pods` shows POD Running while skiff.service stays active.
const guestShellLib = `set -u
fail() {
	echo "FAIL: $*"
	journalctl -u skiff.service --no-pager | tail -n 60
	exit 1
}
wait_pod_running() {
	_i=0
	until skiff pods --root-dir /var/lib/skiff 2>/dev/null | grep -q "^$1 .*Running"; do
		systemctl is-active --quiet skiff.service || fail "skiff.service is $(systemctl is-active skiff.service)"
		_i=$((_i + 1))
		[ "$_i" -le "$2" ] || fail "pod $1 not Running after $2s"
		sleep 1
	done
	echo "pod $1 Running after about ${_i}s"
}
`

// TestSystemdVMSkiffStaticPod installs bin/skiff with a minimal Type=simple
// unit (testdata/skiff-simple.service, not the real one) in the systemd VM
// and checks that its managed containerd runs a static pod there.
func TestSystemdVMSkiffStaticPod(t *testing.T) {
	requireSystemdVM(t)
	runSystemdVM(t, SystemdOptions{
		Adds: skiffGuest(t, "testdata/skiff-simple.service", "testdata/vm-sleeper.yaml"),
		Command: []string{"sh", "-c", guestShellLib + `
systemctl start skiff.service || fail "systemctl start skiff.service"
wait_pod_running vm-sleeper-skiff-vm 300
skiff pods --root-dir /var/lib/skiff
journalctl -u skiff.service --no-pager | grep 'managed runtime' | grep -q 'containerd=` + skiffGuestRuntime + `/containerd' ||
	fail "skiff does not run its own containerd from ` + skiffGuestRuntime + `"
`},
		Timeout: 12 * time.Minute,
	})
}

// TestSystemdVMSkiffUnitReadyAndRestart runs bin/skiff under the real unit,
// contrib/systemd/skiff.service (Type=notify, KillMode=process): `systemctl
// start` returns with the unit active and skiff's STATUS= set (it sent
// READY=1), and `systemctl restart` keeps the pod's runc shim and container
// process (the container alone survives even KillMode=control-group: it lives
// in the kubepods cgroup, the shim in skiff.service's).
func TestSystemdVMSkiffUnitReadyAndRestart(t *testing.T) {
	requireSystemdVM(t)
	runSystemdVM(t, SystemdOptions{
		Adds: skiffGuest(t, "../../contrib/systemd/skiff.service", "testdata/vm-sleeper.yaml"),
		Command: []string{"sh", "-c", guestShellLib + `
[ "$(systemctl show -P Type skiff.service)" = notify ] || fail "skiff.service is Type=$(systemctl show -P Type skiff.service), want notify"
systemctl start skiff.service || fail "systemctl start skiff.service"
[ "$(systemctl show -P ActiveState skiff.service)" = active ] || fail "skiff.service is $(systemctl show -P ActiveState skiff.service) after start"
status=$(systemctl show -P StatusText skiff.service)
[ -n "$status" ] || fail "skiff.service has no STATUS= after start"
echo "started: status \"$status\""
wait_pod_running vm-sleeper-skiff-vm 300
# "[s]": the pattern must not match this script's own command line.
pid=$(pgrep -f 'echo [s]tarted' | tr '\n' ' ' | sed 's/ $//')
case "$pid" in *" "*) fail "more than one container process: $pid";; esac
# comm is cut to 15 characters: containerd-shim-runc-v2 is "containerd-shim".
shim=$(pgrep -x containerd-shim | sort | tr '\n' ' ')
[ -n "$pid" ] && [ -n "$shim" ] || fail "no container process ($pid) or shim ($shim)"
main=$(systemctl show -P MainPID skiff.service)
systemctl restart skiff.service || fail "systemctl restart skiff.service"
[ "$(systemctl show -P MainPID skiff.service)" != "$main" ] || fail "MainPID $main unchanged by the restart"
[ "$(pgrep -x containerd-shim | sort | tr '\n' ' ')" = "$shim" ] ||
	fail "shims $shim replaced by $(pgrep -x containerd-shim | tr '\n' ' ') after the restart"
wait_pod_running vm-sleeper-skiff-vm 120
kill -0 "$pid" 2>/dev/null || fail "container process $pid gone after the restart"
skiff pods --root-dir /var/lib/skiff | grep -q "^vm-sleeper-skiff-vm .*Running *0 " || fail "the pod restarted: $(skiff pods --root-dir /var/lib/skiff)"
echo "shims $shim and container process $pid kept across the restart"
`},
		Timeout: 12 * time.Minute,
	})
}

// TestSystemdVMGracefulNodeShutdown boots twice from one root disk: the
// first boot runs contrib/systemd/skiff.service with graceful node shutdown
// and a pod whose preStop hook and SIGTERM handler append to a hostPath
// file, then ends with the runner's `systemctl poweroff`; the second boot
// finds both lines, in order. systemd's own final SIGTERM would give the
// handler's line but never the hook's.
func TestSystemdVMGracefulNodeShutdown(t *testing.T) {
	requireSystemdVM(t)
	disk := filepath.Join(t.TempDir(), "root.img")
	adds := append(skiffGuest(t, "../../contrib/systemd/skiff.service", "testdata/vm-graceful.yaml"),
		Add{Host: "testdata/skiff-shutdown.env", Guest: skiffGuestEnv})
	opts := SystemdOptions{
		Disk: disk, Adds: adds, Timeout: 12 * time.Minute,
		Command: []string{"sh", "-c", guestShellLib + `
systemctl start skiff.service || fail "systemctl start skiff.service"
wait_pod_running vm-graceful-skiff-vm 300
i=0
until systemd-inhibit --list --no-legend --no-pager | grep -q 'delay'; do
	i=$((i + 1)); [ "$i" -le 60 ] || fail "skiff took no delay inhibitor lock"
	sleep 1
done
systemd-inhibit --list --no-pager
`},
	}
	opts.Machine.PowerOffGrace = 3 * time.Minute
	runSystemdVM(t, opts)
	_, console := runSystemdVM(t, SystemdOptions{
		Disk:    disk,
		Command: []string{"sh", "-c", `echo "marker: $(cat /var/lib/vm-graceful/marker | tr '\n' ' ')"; [ "$(cat /var/lib/vm-graceful/marker | tr '\n' ' ')" = "prestop sigterm " ]`},
	})
	if !strings.Contains(console, "marker: prestop sigterm") {
		t.Errorf("second boot: marker missing; console:\n%s", console)
	}
}

// TestSystemdVMCgroupDriverSystemd runs skiff with --cgroup-driver=systemd
// (and so its containerd with SystemdCgroup) and a Burstable pod: the
// container's process lives in a cri-containerd scope under the pod's
// kubepods-burstable-pod<uid>.slice, a unit systemd knows (active, with the
// pod's memory limit as MemoryMax), and the slice's cgroup has the limits.
// With the driver ignored the process would be in /kubepods/burstable/pod<uid>/.
func TestSystemdVMCgroupDriverSystemd(t *testing.T) {
	requireSystemdVM(t)
	adds := append(skiffGuest(t, "testdata/skiff-simple.service", "testdata/vm-limited.yaml"),
		Add{Host: "testdata/skiff-systemd-driver.env", Guest: skiffGuestEnv})
	runSystemdVM(t, SystemdOptions{
		Adds: adds, Timeout: 12 * time.Minute,
		Command: []string{"sh", "-c", guestShellLib + `
systemctl start skiff.service || fail "systemctl start skiff.service"
wait_pod_running vm-limited-skiff-vm 300
# "[l]": the pattern must not match this script's own command line.
pid=$(pgrep -f 'echo [l]imited' | head -n 1)
[ -n "$pid" ] || fail "no container process"
cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
echo "container cgroup: $cg"
case "$cg" in
/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod*.slice/cri-containerd-*.scope) ;;
*) fail "container cgroup $cg, want a cri-containerd scope in the pod's kubepods-burstable slice" ;;
esac
pod=${cg%/*}
slice=${pod##*/}
for u in kubepods.slice kubepods-burstable.slice "$slice" "${cg##*/}"; do
	[ "$(systemctl show -P ActiveState "$u")" = active ] || fail "systemd unit $u is $(systemctl show -P ActiveState "$u")"
done
mem=$(systemctl show -P MemoryMax "$slice")
echo "$slice: MemoryMax=$mem CPUQuotaPerSecUSec=$(systemctl show -P CPUQuotaPerSecUSec "$slice")"
[ "$mem" = 67108864 ] || fail "$slice MemoryMax=$mem, want 67108864 (64Mi)"
[ "$(cat "/sys/fs/cgroup$pod/memory.max")" = 67108864 ] || fail "memory.max $(cat "/sys/fs/cgroup$pod/memory.max")"
[ "$(cat "/sys/fs/cgroup$pod/cpu.max")" = "50000 100000" ] || fail "cpu.max $(cat "/sys/fs/cgroup$pod/cpu.max")"
[ ! -e /sys/fs/cgroup/kubepods ] || fail "a cgroupfs /kubepods exists beside the slices"
echo "pod in $slice with its limits"
`},
	})
}

// TestSystemdVMReadOnlyRoot (issue 33): skiff under the real unit with a
// drop-in that makes the whole file system read-only for it and its
// children (ProtectSystem=strict) but /var/lib/skiff, /var/log/pods and
// /run: its managed containerd starts, a static pod with an emptyDir and a
// readiness probe becomes Ready, and its log is written.
func TestSystemdVMReadOnlyRoot(t *testing.T) {
	requireSystemdVM(t)
	adds := append(skiffGuest(t, "../../contrib/systemd/skiff.service", "testdata/vm-readonly.yaml"),
		Add{Host: "testdata/skiff-readonly.conf", Guest: "/etc/systemd/system/skiff.service.d/readonly.conf"})
	runSystemdVM(t, SystemdOptions{
		Adds: adds, Timeout: 12 * time.Minute,
		Command: []string{"sh", "-c", guestShellLib + `
# What a read-only image has: the writable directories, and the empty
# /var/lib/cni skiff mounts its CNI result cache over.
mkdir -p /var/lib/skiff /var/log/pods /var/lib/cni
systemctl start skiff.service || fail "systemctl start skiff.service"
main=$(systemctl show -P MainPID skiff.service)
awk '$5 == "/" { print "skiff sees / mounted " $6 }' "/proc/$main/mountinfo"
awk '$5 == "/" && $6 ~ /^ro/ { ro = 1 } END { exit !ro }' "/proc/$main/mountinfo" || fail "/ is not read-only for skiff"
end=$(($(date +%s) + 240))
until timeout 10 skiff pods --root-dir /var/lib/skiff 2>/dev/null | grep -q "^vm-readonly-skiff-vm *1/1 *Running"; do
	if [ "$(date +%s)" -gt "$end" ]; then
		timeout 10 skiff describe pod vm-readonly-skiff-vm -n default --root-dir /var/lib/skiff 2>&1 | tail -n 30
		cat /var/log/pods/*vm-readonly*/app/* 2>&1 | tail -n 5
		fail "the pod is not Ready: $(timeout 10 skiff pods --root-dir /var/lib/skiff 2>&1)"
	fi
	sleep 2
done
grep -rq started /var/log/pods/*vm-readonly*/app/ || fail "no container log under /var/log/pods"
journalctl -u skiff.service --no-pager | grep -i "read-only file system" | grep -v "CNI result cache on a read-only" && fail "skiff hit the read-only file system"
journalctl -u skiff.service --no-pager | grep -q "CNI result cache on a read-only file system" || fail "skiff did not mount the CNI result cache"
[ -n "$(ls /var/lib/skiff/cni/networks/skiff/)" ] || fail "no IP record under the root dir"
echo "the pod is Ready with / read-only for skiff"
`},
	})
}
