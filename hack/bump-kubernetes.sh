#!/usr/bin/env bash
# Moves every module of the repository to the Kubernetes release named in
# internal/k8sversion (or $1): the main module's and bench's
# k8s.io libraries to v0.<minor>.<patch>, and the separate modules that build
# upstream's binaries (test/controlplane, test/conformance/k8s,
# bench/kubelet, test/metricsserver) to k8s.io/kubernetes v1.<minor>.<patch>
# with every staging module pinned by a replace directive, as upstream's own
# go.mod requires of its importers. docs/kubernetes-version.md says what else
# a bump involves; test/versions checks that everything agrees.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=${1:-$(make -s --no-print-directory print-kubernetes-version)}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "bump-kubernetes: version $version is not v1.<minor>.<patch>" >&2; exit 2; }
lib="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
go=${GO:-go}

# The staging modules of this release, from upstream's own go.mod.
k8s_dir=$(cd test/controlplane && GOFLAGS=-mod=mod $go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
mapfile -t staging < <(sed -n 's|^\t\(k8s.io/[a-z-]*\) => ./staging/.*|\1|p' "$k8s_dir/go.mod")
[ ${#staging[@]} -gt 20 ] || { echo "bump-kubernetes: no staging modules in $k8s_dir/go.mod" >&2; exit 1; }

# Modules that link k8s.io/kubernetes itself: require it at $version and
# every staging module at $lib.
for m in test/controlplane test/conformance/k8s bench/kubelet; do
	echo "bump-kubernetes: $m -> k8s.io/kubernetes $version" >&2
	args=(-require="k8s.io/kubernetes@$version")
	for s in "${staging[@]}"; do
		args+=(-replace="$s=$s@$lib")
		# a staging module required at a release (not upstream's v0.0.0)
		# names the same one as its replace
		grep -Eq "^[[:space:]]*(require[[:space:]]+)?$s v0\.[1-9]" "$m/go.mod" && args+=(-require="$s@$lib")
	done
	(cd "$m" && $go mod edit "${args[@]}" && $go mod tidy)
done

# Modules that import only the staging libraries: each k8s.io staging module
# they already require moves to $lib (metrics-server is linked against the
# control plane's libraries, so it shares their build cache).
for m in . bench test/metricsserver; do
	echo "bump-kubernetes: $m -> k8s.io/* $lib" >&2
	mapfile -t have < <(cd "$m" && GOFLAGS=-mod=mod $go list -m -f '{{.Path}}' all | grep '^k8s.io/')
	args=()
	for s in "${staging[@]}"; do
		for h in "${have[@]}"; do [ "$h" = "$s" ] && args+=("$s@$lib"); done
	done
	[ ${#args[@]} -gt 0 ] || { echo "bump-kubernetes: $m requires no k8s.io staging module" >&2; exit 1; }
	(cd "$m" && $go get "${args[@]}" && $go mod tidy)
done
