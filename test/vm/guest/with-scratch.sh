#!/bin/sh
# with-scratch.sh DEV COMMAND [ARG...]: mounts the ext4 file system on DEV
# (vmrun -disk: /dev/nvme0n1) at /tmp and runs COMMAND. The initramfs
# guest's root is a tmpfs, which the cloud kernel (6.1) cannot idmap; the
# e2e suite keeps its root dirs under /tmp, so user-namespaced pods get
# their volumes and overlays on ext4, which it can.
set -e
dev=$1
shift
i=0
while [ ! -b "$dev" ]; do
	i=$((i + 1))
	if [ "$i" -gt 10 ]; then
		echo "with-scratch: no block device $dev after 10 s" >&2
		exit 1
	fi
	sleep 1
done
mount -t ext4 "$dev" /tmp
chmod 1777 /tmp
exec "$@"
