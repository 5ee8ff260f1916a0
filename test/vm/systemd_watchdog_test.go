package vm

import (
	"strings"
	"testing"
	"time"
)

// TestSystemdVMWatchdogRestartsHungAgent checks the watchdog of
// contrib/systemd/skiff.service (issue 18;
// docs/decisions/0001-running-under-systemd.md): a skiff whose sync loop hangs stops its WATCHDOG=1 pings,
// systemd aborts it ("Watchdog timeout") and restarts it, and the pod's
// shims and container process keep running throughout.
//
// The unit runs with testdata/skiff-watchdog.conf (WatchdogSec=20s instead
// of 60s) and testdata/skiff-watchdog.env (--runtime-request-timeout=10s, so
// the heartbeat is stale 2 x 10s + 10s after the loop hangs). skiff first
// starts without the hook and runs the pod; then a drop-in sets
// SKIFF_TEST_HANG_SYNC=after:15s for one `systemctl restart` only: it is
// removed (and the unit reloaded) as soon as that skiff runs, so the skiff
// systemd starts after the watchdog kill does not hang again, whatever the
// timing. Hook at 15s + stale after 30s + at most 20s since the last ping:
// the kill comes about 45-65s after the restart, then RestartSec=5s.
func TestSystemdVMWatchdogRestartsHungAgent(t *testing.T) {
	requireSystemdVM(t)
	adds := append(skiffGuest(t, "../../contrib/systemd/skiff.service", "testdata/vm-sleeper.yaml"),
		Add{Host: "testdata/skiff-watchdog.env", Guest: skiffGuestEnv},
		Add{Host: "testdata/skiff-watchdog.conf", Guest: skiffGuestUnit + ".d/10-watchdog.conf"})
	_, console := runSystemdVM(t, SystemdOptions{
		Adds: adds, Timeout: 12 * time.Minute,
		Command: []string{"sh", "-c", guestShellLib + `
show() { systemctl show -P "$1" skiff.service; }
systemctl start skiff.service || fail "systemctl start skiff.service"
# WatchdogUSec is "infinity" until the service starts.
[ "$(show WatchdogUSec)" = 20s ] || fail "skiff.service has WatchdogSec=$(show WatchdogUSec), want the drop-in's 20s"
wait_pod_running vm-sleeper-skiff-vm 300
# "[s]": the pattern must not match this script's own command line.
pid=$(pgrep -f 'echo [s]tarted' | tr '\n' ' ' | sed 's/ $//')
# comm is cut to 15 characters: containerd-shim-runc-v2 is "containerd-shim".
shim=$(pgrep -x containerd-shim | sort | tr '\n' ' ')
case "$pid" in '' | *' '*) fail "want one container process, have '$pid'" ;; esac
[ -n "$shim" ] || fail "no shim"

hang=/etc/systemd/system/skiff.service.d/20-hang.conf
printf '[Service]\nEnvironment=SKIFF_TEST_HANG_SYNC=after:15s\n' >"$hang"
systemctl daemon-reload
systemctl restart skiff.service || fail "systemctl restart skiff.service with the hang hook"
start=$(date +%s)
rm "$hang"
systemctl daemon-reload
hung=$(show MainPID)
tr '\0' '\n' <"/proc/$hung/environ" | grep -qx 'SKIFF_TEST_HANG_SYNC=after:15s' || fail "skiff $hung runs without the hang hook"
[ "$(show NRestarts)" = 0 ] || fail "NRestarts=$(show NRestarts) before the hang, want 0"
echo "watchdog-test: skiff $hung started with the hang hook"

i=0
until [ "$(show NRestarts)" -ge 1 ] && [ "$(show ActiveState)" = active ]; do
	i=$((i + 1))
	[ "$i" -le 180 ] || fail "no restart of the hung skiff $hung within 180s: NRestarts=$(show NRestarts) ActiveState=$(show ActiveState) MainPID=$(show MainPID)"
	sleep 1
done
took=$(($(date +%s) - start))
main=$(show MainPID)
echo "watchdog-test: skiff $hung replaced by $main after ${took}s, NRestarts=$(show NRestarts)"
[ "$main" != "$hung" ] && [ "$main" != 0 ] || fail "MainPID $main after the restart, hung skiff was $hung"
! kill -0 "$hung" 2>/dev/null || fail "the hung skiff $hung still runs"
journalctl -u skiff.service --no-pager | grep -q 'Watchdog timeout' || fail "no watchdog timeout in skiff.service's journal"
journalctl -u skiff.service --no-pager | grep -E 'Watchdog timeout|SIGABRT|test hook' | sed 's/^/watchdog-test: /'
# The hang starts 15s after exec and the pings stop 30s after the last
# relist: a restart much earlier was not the watchdog's.
[ "$took" -ge 40 ] || fail "skiff restarted ${took}s after the hook's start, before its heartbeat could go stale"
! tr '\0' '\n' <"/proc/$main/environ" | grep -q '^SKIFF_TEST_HANG_SYNC=' || fail "the restarted skiff $main still has the hang hook"

[ "$(pgrep -x containerd-shim | sort | tr '\n' ' ')" = "$shim" ] ||
	fail "shims $shim replaced by $(pgrep -x containerd-shim | tr '\n' ' ') after the watchdog restart"
wait_pod_running vm-sleeper-skiff-vm 120
kill -0 "$pid" 2>/dev/null || fail "container process $pid gone after the watchdog restart"
skiff pods --root-dir /var/lib/skiff | grep -q "^vm-sleeper-skiff-vm .*Running *0 " || fail "the pod restarted: $(skiff pods --root-dir /var/lib/skiff)"
[ "$(show NRestarts)" = 1 ] || fail "NRestarts=$(show NRestarts) after the pod check, want 1"
echo "watchdog-test: shims $shim and container process $pid kept across the watchdog restart"
`},
	})
	// The timings, for README.md's measurements.
	for line := range strings.Lines(console) {
		if strings.Contains(line, "watchdog-test: ") {
			t.Log(strings.TrimSpace(line))
		}
	}
}
