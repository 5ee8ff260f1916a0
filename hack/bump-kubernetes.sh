#!/usr/bin/env bash
# Moves every module of the repository to the Kubernetes release named in
# internal/k8sversion (Version, or $1; test/controlplane/oldest to
# OldestAPIServer, or $2): the main module's and bench's
# k8s.io libraries to v0.<minor>.<patch>, and the separate modules that build
# upstream's binaries (test/controlplane, test/conformance/k8s,
# bench/kubelet) and skiff-apiserver to k8s.io/kubernetes v1.<minor>.<patch>
# with every staging module pinned by a replace directive, as upstream's own
# go.mod requires of its importers. docs/kubernetes-version.md says what else
# a bump involves; internal/k8sversion's TestModulesAtVersion checks that
# everything agrees.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

const() { sed -n "s/^\t$1 = \"\(v[0-9.]*\)\"\$/\1/p" internal/k8sversion/version.go; }
version=${1:-$(const Version)}
oldest=${2:-$(const OldestAPIServer)}
go=${GO:-go}

# lib prints the staging modules' version of release $1 (v1.37.2: v0.37.2).
lib() {
	[[ $1 =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "bump-kubernetes: version '$1' is not v1.<minor>.<patch>" >&2; exit 2; }
	echo "v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
}
lib=$(lib "$version")
lib "$oldest" >/dev/null

# staging prints the staging modules of release $1, from upstream's go.mod.
staging() {
	local dir
	dir=$(cd test/controlplane && GOFLAGS=-mod=mod $go mod download -json "k8s.io/kubernetes@$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	sed -n 's|^\t\(k8s.io/[a-z-]*\) => ./staging/.*|\1|p' "$dir/go.mod"
}

# pin makes module directory $1 require k8s.io/kubernetes $2 and replace
# every staging module by its release, then tidies it.
pin() {
	local m=$1 v=$2 l s
	l=$(lib "$v")
	local -a staging args
	mapfile -t staging < <(staging "$v")
	[ ${#staging[@]} -gt 20 ] || { echo "bump-kubernetes: no staging modules in k8s.io/kubernetes@$v" >&2; exit 1; }
	echo "bump-kubernetes: $m -> k8s.io/kubernetes $v" >&2
	args=(-require="k8s.io/kubernetes@$v")
	for s in "${staging[@]}"; do
		args+=(-replace="$s=$s@$l")
		# a staging module required at a release (not upstream's v0.0.0)
		# names the same one as its replace
		grep -Eq "^[[:space:]]*(require[[:space:]]+)?$s v0\.[1-9]" "$m/go.mod" && args+=(-require="$s@$l")
	done
	(cd "$m" && $go mod edit "${args[@]}" && $go mod tidy)
}

# Modules that link k8s.io/kubernetes itself.
for m in test/controlplane test/conformance/k8s bench/kubelet; do
	pin "$m" "$version"
done
# The oldest control plane has no sources of its own: it is tidied beside a
# copy of test/controlplane's.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp test/controlplane/*.go test/controlplane/oldest/go.mod test/controlplane/oldest/go.sum "$tmp"/
pin "$tmp" "$oldest"
cp "$tmp/go.mod" "$tmp/go.sum" test/controlplane/oldest/
mapfile -t staging < <(staging "$version")

# Modules that import only the staging libraries: each k8s.io staging module
# they already require moves to $lib.
# test/metricsserver keeps its release's libraries (see its go.mod).
for m in . bench; do
	echo "bump-kubernetes: $m -> k8s.io/* $lib" >&2
	mapfile -t have < <(cd "$m" && GOFLAGS=-mod=mod $go list -m -f '{{.Path}}' all | grep '^k8s.io/')
	args=()
	for s in "${staging[@]}"; do
		for h in "${have[@]}"; do [ "$h" = "$s" ] && args+=("$s@$lib"); done
	done
	[ ${#args[@]} -gt 0 ] || { echo "bump-kubernetes: $m requires no k8s.io staging module" >&2; exit 1; }
	(cd "$m" && $go get "${args[@]}" && $go mod tidy)
done

# skiff-apiserver links k8s.io/kubernetes and skiff's module (replace ../..,
# decision 111): pinned after the main module moved.
pin cmd/skiff-apiserver "$version"
