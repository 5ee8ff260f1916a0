#!/usr/bin/env bash
# test/setup.sh prepares a Debian 12 machine for skiff's e2e tests and for
# `make run`: it installs what `make runtime` needs to build the managed
# containerd 2 and runc (gcc, libseccomp-dev), Debian's containerd and runc
# (the external runtime of tests and benchmarks), the CNI plugins, a static
# busybox (packaged into the test images; the CNI plugins, with iptables,
# also into the node image of `make node-image`) and the tools around them, loads the kernel
# modules containers need, and prints the versions. Idempotent: it calls
# apt-get only for packages that are missing. Needs root; works without a TTY.
#
# test/setup.sh --runtime installs only what running pods needs (make run,
# make bench, make bench-quick): no cgroup v2 VM
# (qemu and a cloud kernel, most of a fresh machine's download).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

runtime_only=false
case "${1:-}" in
--runtime) runtime_only=true ;;
"") ;;
*)
	echo "usage: test/setup.sh [--runtime]" >&2
	exit 2
	;;
esac

if [ "$(id -u)" -ne 0 ]; then
	echo "test/setup.sh: must run as root" >&2
	exit 1
fi

# Every program this script, the Makefile, the tests and the benchmark call
# comes from a package below or from Debian's required set (bash, coreutils,
# dpkg, apt, mawk, grep, util-linux, libc-bin's ldd), which even a minimal
# root has; `make test-fresh` proves it on a debootstrap --variant=minbase
# root. kmod: modprobe (here) and depmod (the VM kernel); procps: sysctl;
# iptables: the CNI bridge plugin's masquerading and the VM's initramfs;
# iproute2: ip, for looking at the pod network by hand. etcd-server: etcd,
# the store of the control plane test/cluster starts for the API-source tests
# and for make bench's API-pods scenario (the package's own service is never
# started: see the policy file below).
# gcc, libc6-dev, pkg-config and libseccomp-dev: make runtime builds runc
# (cgo, seccomp) for the managed runtime; `go test -race` needs cgo too.
# containerd and runc (Debian's 1.6 and 1.1): the external runtime of the
# tests that prove skiff on a containerd 1.x, and make bench's external one.
# nftables: nft, which the control plane's service proxy (kube-proxy's
# nftables mode, in skiff-apiserver) runs; also put into the kube-proxy
# image of `make conformance-full`.
packages=(containerd runc containernetworking-plugins busybox-static iproute2 iptables nftables kmod procps ca-certificates etcd-server gcc libc6-dev pkg-config libseccomp-dev)
# qemu-system-x86: the cgroup v2
# VM of `make test-v2` (test/vm), which also needs a cloud kernel (below).
# curl, netcat-openbsd and dash: put into the agnhost
# image of `make conformance` (test/conformance), as upstream's has them.
# debootstrap and e2fsprogs (mkfs.ext4 -d): the systemd VM of
# `make test-systemd` builds its Debian 12 root with them (test/vm).
# bind9-dnsutils: dig, put into the
# agnhost and glibc-dns-testing images (the DNS tests' probes run it).
$runtime_only || packages+=(qemu-system-x86 curl netcat-openbsd dash debootstrap e2fsprogs bind9-dnsutils)

# The commands the packages above must provide, checked after the install: a
# package list that misses one fails right after the install, not halfway
# through a test.
commands=(containerd containerd-shim-runc-v2 runc iptables iptables-save nft ip busybox modprobe sysctl etcd gcc pkg-config)
$runtime_only || commands+=(depmod qemu-system-x86_64 curl nc.openbsd dash debootstrap mkfs.ext4 dig)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	# Keep package scripts from starting a system containerd or etcd: skiff
	# runs its own containerd, test/cluster its own etcd. Only add the
	# policy file if none exists, and remove it after.
	policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get update -q
	apt-get install -y -q --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
		"${missing[@]}"
else
	echo "setup: all packages present"
fi

lacking=()
for c in "${commands[@]}"; do
	command -v "$c" >/dev/null || lacking+=("$c")
done
[ -x /usr/lib/cni/bridge ] || lacking+=(/usr/lib/cni/bridge)
if [ "${#lacking[@]}" -gt 0 ]; then
	echo "setup: still missing after the install: ${lacking[*]} (a package is missing from test/setup.sh)" >&2
	exit 1
fi

# The VM kernel for test/vm: Debian's cloud kernel. Unless the host has it
# installed already, unpack the package into a root of its own (boot/ and
# lib/modules/ with a modules index) instead of installing it, so it never
# becomes the host's boot kernel and no host initramfs is built.
vm_kernel_root=/var/cache/skiff-vm/kernel
have_vm_kernel() {
	local k
	for k in /boot/vmlinuz-*-cloud-amd64 "$vm_kernel_root"/boot/vmlinuz-*-cloud-amd64; do
		[ -e "$k" ] && [ -e "$(dirname "$(dirname "$k")")/lib/modules/${k##*/vmlinuz-}/modules.dep" ] && return 0
	done
	return 1
}
if ! $runtime_only && ! have_vm_kernel; then
	[ "${#missing[@]}" -gt 0 ] || apt-get update -q
	kpkg=$(apt-cache depends linux-image-cloud-amd64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	[ -n "$kpkg" ] || { echo "setup: cannot resolve linux-image-cloud-amd64" >&2; exit 1; }
	echo "setup: unpacking $kpkg into $vm_kernel_root"
	kdir=$(mktemp -d)
	(cd "$kdir" && chown _apt "$kdir" 2>/dev/null; apt-get download -q "$kpkg")
	rm -rf "$vm_kernel_root"
	mkdir -p "$vm_kernel_root"
	dpkg-deb -x "$kdir"/"$kpkg"_*.deb "$vm_kernel_root"
	rm -rf "$kdir"
	kver=${kpkg#linux-image-}
	depmod -b "$vm_kernel_root" "$kver"
fi

# Best effort: inside a container (or a chroot without the host kernel's
# modules) these may already be loaded, or not loadable at all; the agent
# reports what it really lacks. modprobe and sysctl themselves must exist
# (checked above): a missing program is an install bug, not a best effort.
for m in overlay br_netfilter bridge veth; do
	modprobe "$m" 2>/dev/null || true
done
sysctl -qw net.ipv4.ip_forward=1 2>/dev/null || true

echo "setup: versions"
echo "  kernel      $(uname -r), cgroup fs $(stat -fc %T /sys/fs/cgroup/)"
echo "  containerd  $(containerd --version) (external; the managed one: make runtime)"
echo "  runc        $(runc --version | head -n1) (external)"
echo "  busybox     $(busybox 2>/dev/null | head -n1 || true)"
echo "  cni         $(CNI_COMMAND=VERSION /usr/lib/cni/bridge 2>/dev/null || echo "bridge plugin missing")"
echo "  iptables    $(iptables --version)"
if ! $runtime_only; then
	echo "  qemu        $(qemu-system-x86_64 --version | head -n1)"
	echo "  etcd        $(etcd --version | head -n1)"
	echo "  vm kernel   $(ls /boot/vmlinuz-*-cloud-amd64 "$vm_kernel_root"/boot/vmlinuz-*-cloud-amd64 2>/dev/null | tr '\n' ' ')"
fi
if command -v go >/dev/null; then
	echo "  go          $(go version)"
fi
