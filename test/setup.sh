#!/usr/bin/env bash
# test/setup.sh prepares a Debian 12 machine for skiff's e2e tests and for
# `make run`: it installs containerd, runc, the CNI plugins, a static busybox
# (packaged into the test images) and the tools around them, loads the kernel
# modules containers need, and prints the versions. Idempotent: it calls
# apt-get only for packages that are missing. Needs root; works without a TTY.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if [ "$(id -u)" -ne 0 ]; then
	echo "test/setup.sh: must run as root" >&2
	exit 1
fi

# gcc and libc6-dev: `go test -race` needs cgo.
packages=(containerd runc containernetworking-plugins busybox-static iproute2 iptables ca-certificates gcc libc6-dev)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	# Keep package scripts from starting a system containerd: skiff runs
	# its own. Only add the policy file if none exists, and remove it after.
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

# Best effort: inside a container these may already be loaded, or not
# loadable at all; the agent reports what it really lacks.
for m in overlay br_netfilter bridge veth; do
	modprobe "$m" 2>/dev/null || true
done
sysctl -qw net.ipv4.ip_forward=1 2>/dev/null || true

echo "setup: versions"
echo "  kernel      $(uname -r), cgroup fs $(stat -fc %T /sys/fs/cgroup/)"
echo "  containerd  $(containerd --version)"
echo "  runc        $(runc --version | head -n1)"
echo "  busybox     $(busybox 2>/dev/null | head -n1 || true)"
echo "  cni         $(CNI_COMMAND=VERSION /usr/lib/cni/bridge 2>/dev/null || echo "bridge plugin missing")"
echo "  iptables    $(iptables --version)"
if command -v go >/dev/null; then
	echo "  go          $(go version)"
fi
