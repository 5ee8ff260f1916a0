#!/usr/bin/env bash
# test/fresh/run.sh (make test-fresh) proves that a fresh, minimal Debian 12
# gets from nothing to a running pod with only what the README lists as
# prerequisites (Go, make): it unpacks a pristine `debootstrap
# --variant=minbase bookworm` root, chroots into it with the host's /proc,
# /sys (the cgroup hierarchies), /dev and Go toolchain, and runs
# test/fresh/inside.sh there: test/setup.sh --runtime, the build, the agent on
# examples/manifests until the example pod is Running, then the full
# test/setup.sh of `make test` and a -race build. A package missing from
# test/setup.sh fails it.
#
# The pristine root is built once (debootstrap downloads ~40 MB from the
# mirror of the host's own apt sources; FRESH_MIRROR overrides) and kept as
# _output/fresh/bookworm-minbase.tar; every run unpacks a new copy, so every
# run starts minimal. Downloaded .debs are kept in _output/fresh/apt-archives
# between runs (the packages are still installed fresh). FRESH_KEEP=1 keeps
# the unpacked root after the run.
#
# Root only. It starts containerd and uses the bridge skiff0 in the host's
# network namespace, like the e2e suite: do not run both at once. Everything
# it starts, mounts or creates is removed on exit, failed or not.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

if [ "$(id -u)" -ne 0 ]; then
	echo "test-fresh: must run as root" >&2
	exit 1
fi

GO=${GO:-go}
cache=$repo/_output/fresh
tarball=$cache/bookworm-minbase.tar
root=$cache/root
archives=$cache/apt-archives
cgroup_root=skiff-fresh # the agent's --cgroup-root, without the slash
started=$(date +%s)

log() { echo "test-fresh [$(($(date +%s) - started))s]: $*"; }

# host_mirror prints the URI of the host's apt source for bookworm, from
# deb822 .sources files or one-line .list files.
host_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
		{
			types = ""; uris = ""; suites = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^Types:/) types = " " substr($i, 7) " "
				if ($i ~ /^URIs:/) uris = substr($i, 6)
				if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
			}
			if (types ~ /[ \t]deb[ \t]/ && suites ~ /[ \t]bookworm[ \t]/) { split(uris, u, " "); print u[1] }
		}' "$f"
	done
	{ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } |
		awk '$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
			if ($(i + 1) == "bookworm") print $i
		}'
}

# mounts_under prints the mount points at or below $1, innermost last.
mounts_under() {
	awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo
}

# unmount_under unmounts everything at or below $1, innermost first.
unmount_under() {
	local m
	for m in $(mounts_under "$1" | tac); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
}

# cgroup_pids prints the processes in the agent's cgroup subtree (the pods)
# in every cgroup hierarchy.
cgroup_pids() {
	local d
	for d in /sys/fs/cgroup/*/"$cgroup_root" /sys/fs/cgroup/"$cgroup_root"; do
		[ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
	done
	return 0
}

# chroot_pids prints the processes whose root directory is the chroot (the
# agent, containerd, the shims, whatever inside.sh started).
chroot_pids() {
	local p r
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		if [ "$r" = "$root" ] || [ "${r#"$root"/}" != "$r" ]; then
			echo "${p#/proc/}"
		fi
	done
}

# kill_all kills, by PID, every process this run started: first politely,
# then with SIGKILL.
kill_all() {
	local sig pids
	for sig in TERM KILL KILL; do
		pids=$( (chroot_pids; cgroup_pids) | sort -u | grep -vx "$$" || true)
		[ -n "$pids" ] || return 0
		log "killing (SIG$sig) leftover processes: ${pids//$'\n'/ }"
		# shellcheck disable=SC2086
		kill -s "$sig" $pids 2>/dev/null || true
		sleep 3
	done
}

remove_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/"$cgroup_root" /sys/fs/cgroup/"$cgroup_root"; do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return 0
}

veths() { ip -o link show type veth 2>/dev/null | awk -F': ' '{ print $2 }' | sort; }

had_bridge=false
ip link show skiff0 >/dev/null 2>&1 && had_bridge=true
veths_before=$(veths)

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	kill_all
	unmount_under "$root"
	remove_cgroups
	$had_bridge || ip link delete skiff0 2>/dev/null
	local left
	left=$(comm -13 <(echo "$veths_before") <(veths))
	if [ -n "$left" ]; then
		log "veth interfaces left behind: ${left//$'\n'/ }"
		[ "$rc" -ne 0 ] || rc=1
	fi
	if [ -n "$(mounts_under "$root")" ]; then
		log "mounts left behind under $root"
		[ "$rc" -ne 0 ] || rc=1
	elif [ "${FRESH_KEEP:-0}" != 1 ]; then
		rm -rf --one-file-system "$root"
	fi
	if [ "$rc" -eq 0 ]; then log "PASS"; else log "FAIL (exit $rc)"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$cache" "$archives"
# A run killed without its trap may have left mounts behind.
unmount_under "$root"
unmount_under "$cache/bootstrap"

# The pristine minimal root, built once.
if [ ! -s "$tarball" ]; then
	mirror=${FRESH_MIRROR:-$(host_mirror)}
	mirror=${mirror%%$'\n'*}
	if [ -z "$mirror" ]; then
		echo "test-fresh: no bookworm source in /etc/apt; set FRESH_MIRROR" >&2
		exit 1
	fi
	if ! command -v debootstrap >/dev/null; then
		log "installing debootstrap"
		apt-get update -q
		apt-get install -y -q debootstrap
	fi
	log "debootstrap --variant=minbase bookworm from $mirror"
	rm -rf --one-file-system "$cache/bootstrap"
	debootstrap --variant=minbase bookworm "$cache/bootstrap" "$mirror"
	tar -C "$cache/bootstrap" --numeric-owner -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf --one-file-system "$cache/bootstrap"
fi

log "unpacking a fresh root"
rm -rf --one-file-system "$root"
mkdir -p "$root"
tar -C "$root" --numeric-owner -xf "$tarball"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

# The repository: its tracked and untracked-but-not-ignored files, as a
# clean clone has them (no bin/, no _output/, no .git).
mkdir -p "$root/skiff"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$repo" ls-files -z -co --exclude-standard |
		tar -C "$repo" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$root/skiff" -xf -
else
	tar -C "$repo" --exclude=./_output --exclude=./bin --exclude=./.git -cf - . | tar -C "$root/skiff" -xf -
fi

# Go from the host (a prerequisite, not something setup installs), read-only,
# with the host's module and build caches so nothing is downloaded twice.
goroot=$("$GO" env GOROOT)
gomodcache=$("$GO" env GOMODCACHE)
gocache=$("$GO" env GOCACHE)
mkdir -p "$gomodcache" "$gocache"

# The root is a mount point of its own (runc's pivot_root needs the
# caller's root to be one) and private, so that the mounts containerd makes
# inside (overlays, network namespaces) never propagate to the host's.
log "mounting"
mount --bind "$root" "$root"
mount --make-private "$root"
mount -t proc proc "$root/proc"
for d in sys dev; do
	mount --rbind "/$d" "$root/$d"
	mount --make-rslave "$root/$d"
done
mount -t tmpfs -o mode=755 tmpfs "$root/run"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
# Same paths as on the host: the build cache's keys include source paths.
for pair in "$goroot:$goroot" "$gomodcache:$gomodcache" "$gocache:$gocache" "$archives:/var/cache/apt/archives"; do
	src=${pair%%:*} dst=$root${pair#*:}
	mkdir -p "$dst"
	mount --bind "$src" "$dst"
done
mount -o remount,bind,ro "$root$goroot"

goenv=()
for v in GOPROXY GOSUMDB GONOSUMDB GONOPROXY GOPRIVATE GOINSECURE GOFLAGS; do
	goenv+=("$v=$("$GO" env "$v")")
done

log "running test/fresh/inside.sh in the chroot"
# In the background, so that a SIGTERM or SIGINT to this script runs the
# clean-up at once (bash runs traps only between foreground commands).
chroot "$root" /usr/bin/env -i \
	HOME=/root TERM=dumb LANG=C.UTF-8 \
	PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$goroot/bin" \
	GOMODCACHE="$gomodcache" GOCACHE="$gocache" GOTOOLCHAIN=local "${goenv[@]}" \
	FRESH_CGROUP_ROOT="/$cgroup_root" \
	/bin/bash /skiff/test/fresh/inside.sh &
wait $!
