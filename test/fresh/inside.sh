#!/usr/bin/env bash
# test/fresh/inside.sh runs inside the fresh minimal Debian 12 chroot that
# test/fresh/run.sh prepares (the repository at /skiff, the host's Go at its
# host path); see there. It does what a user of a fresh machine does:
# install the prerequisite make, then `make setup-runtime build images`, start
# the agent on examples/manifests and wait for the example pod to run; then
# the full test/setup.sh of `make test` and a -race build, which needs the C
# compiler setup installs. It stops the pod and the agent before it returns;
# run.sh cleans up whatever is left after a failure.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
cd /skiff

started=$(date +%s)
log() { echo "test-fresh inside [$(($(date +%s) - started))s]: $*"; }

root_dir=/var/lib/skiff-fresh
manifests=/tmp/fresh-manifests
agent_log=/tmp/fresh-agent.log
pod=example-$(uname -n)
agent=

dump() {
	echo "--- skiff pods"
	bin/skiff pods --root-dir "$root_dir" 2>&1 || true
	echo "--- skiff describe $pod"
	bin/skiff describe "$pod" --root-dir "$root_dir" 2>&1 | tail -n 40 || true
	echo "--- agent log (tail)"
	tail -n 60 "$agent_log" 2>/dev/null || true
}

# wait_for CMD... retries CMD every second for up to $timeout seconds.
wait_for() {
	local deadline=$(($(date +%s) + timeout))
	until "$@"; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			return 1
		fi
		sleep 1
	done
}

pod_running() { bin/skiff pods --root-dir "$root_dir" 2>/dev/null | awk -v p="$pod" '$1 == p && $3 == "Running" { ok = 1 } END { exit !ok }'; }
no_pods() { ! bin/skiff pods --root-dir "$root_dir" 2>/dev/null | awk -v p="$pod" '$1 == p { found = 1 } END { exit !found }'; }

on_exit() {
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		log "failed (exit $rc)"
		[ -z "$agent" ] || dump
	fi
	if [ -n "$agent" ] && kill -0 "$agent" 2>/dev/null; then
		kill -TERM "$agent" 2>/dev/null || true
		wait "$agent" 2>/dev/null || true
	fi
}
trap on_exit EXIT

# The README's prerequisites are Go (bind-mounted from the host) and make.
log "installing the prerequisite make"
apt-get update -q
apt-get install -y -q --no-install-recommends make

log "make setup-runtime build images"
make setup-runtime
make build images

log "starting the agent on examples/manifests"
install -d "$root_dir/images" "$manifests"
cp _output/images/busybox.tar "$root_dir/images/"
cp examples/manifests/*.yaml "$manifests/"
bin/skiff agent --pod-manifest-path "$manifests" --root-dir "$root_dir" \
	--cgroup-root "${FRESH_CGROUP_ROOT:-/skiff-fresh}" >"$agent_log" 2>&1 &
agent=$!

timeout=240
if ! wait_for pod_running; then
	log "pod $pod did not reach Running in ${timeout}s"
	exit 1
fi
bin/skiff pods --root-dir "$root_dir"
# The pod runs on skiff's own runtime (make runtime), not a containerd
# from PATH: the agent's log names it and its versions.
if ! grep -q 'msg="managed runtime" from="skiff'"'"'s own' "$agent_log"; then
	log "the agent did not run skiff's own containerd:"
	grep 'managed runtime' "$agent_log" || true
	exit 1
fi
grep 'managed runtime' "$agent_log"
log "pod $pod is Running; removing its manifest"

rm -f "$manifests"/*.yaml
timeout=120
if ! wait_for no_pods; then
	log "pod $pod was not removed in ${timeout}s"
	exit 1
fi
log "pod removed; stopping the agent"
kill -TERM "$agent"
if ! wait "$agent"; then
	log "the agent exited with an error"
	tail -n 30 "$agent_log"
	exit 1
fi
agent=

# What `make test` installs on top: gcc for -race, qemu and the VM kernel.
log "full test/setup.sh (make test's setup)"
make setup
log "go test -race (needs the C compiler setup installed)"
go test -race -count=1 ./cgroups/
log "done"
