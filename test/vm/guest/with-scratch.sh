#!/bin/sh
# with-scratch.sh DEV COMMAND [ARG...]: mounts the ext4 file system on DEV
# (vmrun -disk: /dev/nvme0n1) at /scratch and runs COMMAND with TMPDIR
# there. The initramfs guest's root is a tmpfs, which the cloud kernel
# (6.1) cannot idmap; tests that need idmapped mounts (user-namespaced
# pods) keep their directories on the ext4 disk instead.
set -e
dev=$1
shift
mkdir -p /scratch
mount -t ext4 "$dev" /scratch
export TMPDIR=/scratch
exec "$@"
