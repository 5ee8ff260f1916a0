#!/bin/sh
# Stage 1, /init of the initramfs (PID 1). The initramfs root cannot be
# pivot_root'ed away, and runc pivot_roots into every container, so copy
# the whole tree into a tmpfs and switch_root there; switch_root frees the
# initramfs copy. Stage 2 (/sbin/vm-init) does the real work.
export PATH=/usr/sbin:/usr/bin
fail() {
	echo "vm-init: $*" >/dev/console
	exec poweroff -f
}
mkdir -p /newroot || fail "mkdir /newroot failed"
mount -t tmpfs -o mode=0755,size=90% rootfs /newroot || fail "mount tmpfs on /newroot failed"
for e in /*; do
	case "$e" in
	/newroot) ;;
	*) cp -a "$e" /newroot/ || fail "copy $e to the tmpfs root failed" ;;
	esac
done
exec switch_root /newroot /sbin/vm-init
fail "switch_root failed"
