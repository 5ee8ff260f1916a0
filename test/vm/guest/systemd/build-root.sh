#!/usr/bin/env bash
# build-root.sh builds the root disk of the systemd test VM (test/vm,
# RunSystemd): a debootstrap'ed Debian root whose init is systemd, with the
# container runtime from Debian's packages, the VM kernel's modules, the test
# runner (overlay/) and units that slow a TCG boot down masked, written as an
# ext4 image. Needs root (debootstrap chroots, files keep their owners).
#
#	build-root.sh IMAGE SUITE MIRROR PACKAGES MODULES_DIR OVERLAY_DIR
#
# PACKAGES is a comma-separated --include list; MODULES_DIR is
# <root>/lib/modules/<version> of the VM kernel; OVERLAY_DIR is copied onto
# the root last. The caller (sysroot.go) caches IMAGE by a hash of this
# script and its arguments, so any change here rebuilds the root.
set -euo pipefail
export LC_ALL=C

[ $# -eq 6 ] || { echo "usage: build-root.sh IMAGE SUITE MIRROR PACKAGES MODULES_DIR OVERLAY_DIR" >&2; exit 2; }
image=$1 suite=$2 mirror=$3 packages=$4 modules=$5 overlay=$6
[ "$(id -u)" -eq 0 ] || { echo "build-root.sh: must run as root (debootstrap)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "build-root.sh: debootstrap missing (test/setup.sh)" >&2; exit 1; }
command -v mkfs.ext4 >/dev/null || { echo "build-root.sh: mkfs.ext4 missing (e2fsprogs)" >&2; exit 1; }

root=$(dirname "$image")/root
rm -rf "$root"
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror"

# The VM kernel's modules (overlay, bridge, netfilter, ...) for udev and
# modprobe; bookworm's /lib is a link to usr/lib.
kver=$(basename "$modules")
mkdir -p "$root/usr/lib/modules"
cp -a "$modules" "$root/usr/lib/modules/$kver"

cp -a "$overlay/." "$root/"

echo skiff-vm >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 skiff-vm\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
# The root comes mounted rw from the kernel command line: no fstab line, so
# no fsck and no wait for udev to announce /dev/nvme0n1. The data disk
# (RunSystemd's) is the second NVMe namespace.
cat >"$root/etc/fstab" <<'FSTAB'
LABEL=skiffvm-data /mnt/vm ext4 rw,noatime,nofail,x-systemd.device-timeout=60s 0 0
FSTAB
mkdir -p "$root/mnt/vm"
# A fixed machine ID: an empty one means "first boot", which runs
# systemd-firstboot's prompts on the console.
printf '%s\n' 5a1ff0000000000000000000000000aa >"$root/etc/machine-id"
# Root without a password, for looking around when debugging on the console.
chroot "$root" passwd -dq root
# The journal in memory: no disk writes, and nothing to flush at power-off.
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nForwardToConsole=no\n' >"$root/etc/systemd/journald.conf.d/skiff-vm.conf"

# Units a throwaway TCG guest does not need; each costs boot time. The
# packaged containerd service is masked: skiff runs its own containerd.
mask=(
	getty@.service serial-getty@.service getty.target console-getty.service
	containerd.service
	apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer e2scrub_reap.service
	fstrim.timer systemd-tmpfiles-clean.timer
	systemd-pstore.service systemd-firstboot.service systemd-timesyncd.service
	systemd-networkd.service systemd-networkd-wait-online.service systemd-resolved.service
	remote-fs.target
	modprobe@fuse.service modprobe@loop.service modprobe@drm.service modprobe@efi_pstore.service
	modprobe@configfs.service sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount
	sys-fs-fuse-connections.mount dev-hugepages.mount proc-sys-fs-binfmt_misc.automount
	systemd-binfmt.service systemd-journal-flush.service systemd-update-utmp.service
	systemd-update-utmp-runlevel.service systemd-ask-password-wall.path systemd-hwdb-update.service
	ldconfig.service
)
for u in "${mask[@]}"; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
rm -f "$root"/etc/systemd/system/*.wants/containerd.service "$root"/etc/systemd/system/*.wants/e2scrub_reap.service
systemctl --root="$root" set-default multi-user.target
systemctl --root="$root" enable skiff-vm-test.service skiff-vm-net.service

# Smaller image: no package archives or lists, no docs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*

# Room for images and containers besides the files.
used=$(du -sm "$root" | cut -f1)
rm -f "$image"
truncate -s "$((used + 3072))M" "$image"
mkfs.ext4 -q -F -L skiffvm-root -d "$root" "$image"
