#!/bin/sh
# Stage 2, /sbin/vm-init (PID 1 on the tmpfs root): mount the API file
# systems with cgroup v2 only, load the kernel modules, set up loopback and
# a dummy node interface, run /etc/vmrun/run.sh with a timeout, print the
# result marker and power off. /etc/vmrun/config sets VMRUN_NONCE,
# VMRUN_TIMEOUT (seconds) and VMRUN_HOSTNAME.
export PATH=/usr/sbin:/usr/bin
export HOME=/root
. /etc/vmrun/config

say() { echo "vm-init: $*"; }

# result prints the marker the host looks for, through the tty and through
# the kernel log (synchronous, so it survives the power-off), then powers
# off. -f: there is no init system to ask.
result() {
	line="SKIFF-VM-RESULT $VMRUN_NONCE rc=$1${2:+ $2}"
	echo "$line"
	echo "<2>$line" >/dev/kmsg 2>/dev/null
	sleep 1
	poweroff -f
	sleep 10
}

mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o mode=0755,nosuid devtmpfs /dev
exec </dev/null >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o nosuid,nodev,mode=1777 shm /dev/shm
mount -t mqueue -o nosuid,nodev,noexec mqueue /dev/mqueue
mount -t tmpfs -o nosuid,nodev,mode=0755 run /run
# cgroup v2 only (the kernel runs with cgroup_no_v1=all), mounted the way
# systemd does it.
if ! mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup; then
	say "mounting cgroup2 failed"
	result 125 reason=setup
fi
# Hand every controller down from the root, as systemd does.
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
	echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || say "cannot enable cgroup controller $c"
done

# Modules in dependency order; built-in or already loaded ones are fine.
if [ -f /etc/vmrun/modules ]; then
	while read -r m; do
		[ -n "$m" ] || continue
		insmod "/lib/modules/$(uname -r)/$m" 2>/dev/null ||
			grep -q "^$(basename "$m" .ko | tr - _) " /proc/modules ||
			say "insmod $m failed"
	done </etc/vmrun/modules
fi

hostname "$VMRUN_HOSTNAME"
ip link set lo up
# A node address and default route on a dummy interface, so the node has
# an IP besides loopback (status.hostIP) without real networking.
if ip link add eth0 type dummy 2>/dev/null; then
	ip addr add 10.0.2.15/24 dev eth0
	ip link set eth0 up
	ip route add default via 10.0.2.2 dev eth0
fi
sysctl -qw net.ipv4.ip_forward=1
sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null

# busybox stat prints the file system magic, not its name: 63677270 is
# CGROUP2_SUPER_MAGIC, what coreutils calls cgroup2fs.
fstype=$(stat -fc %t /sys/fs/cgroup)
[ "$fstype" = 63677270 ] && fstype=cgroup2fs
read -r up _ </proc/uptime
echo "SKIFF-VM-BOOTED $VMRUN_NONCE uptime=$up cgroupfs=$fstype controllers=\"$(cat /sys/fs/cgroup/cgroup.subtree_control)\""

# The command runs in its own process group so that a timeout kills all of
# it; the watchdog reports the timeout.
setsid /etc/vmrun/run.sh &
pid=$!
(
	sleep "$VMRUN_TIMEOUT"
	say "command timed out after ${VMRUN_TIMEOUT}s; killing it"
	touch /run/vmrun-timeout
	kill -TERM -"$pid" 2>/dev/null
	sleep 10
	kill -KILL -"$pid" 2>/dev/null
) &
watchdog=$!
wait "$pid"
rc=$?
kill "$watchdog" 2>/dev/null
if [ -e /run/vmrun-timeout ]; then
	result 124 reason=timeout
fi
result "$rc"
