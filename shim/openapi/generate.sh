#!/bin/sh
# Regenerates zz_generated.openapi.go with the openapi-gen of the
# kube-openapi version in go.mod. openapi-gen's own module pins a
# golang.org/x/tools too old for Go 1.26, so it is built in a throwaway
# module with a newer x/tools.
set -eu
cd "$(dirname "$0")/../.."
kov=$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/go.mod" <<MOD
module ogen

go 1.26.8

require (
	k8s.io/kube-openapi $kov
	golang.org/x/tools v0.52.0
)
MOD
printf '//go:build tools\n\npackage ogen\n\nimport _ "k8s.io/kube-openapi/cmd/openapi-gen"\n' >"$tmp/tools.go"
(cd "$tmp" && GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 && GOFLAGS=-mod=mod go build -o openapi-gen k8s.io/kube-openapi/cmd/openapi-gen)
: >"$tmp/header.txt"
"$tmp/openapi-gen" --output-dir shim/openapi \
	--output-pkg github.com/skiffnode/skiff/shim/openapi \
	--output-file zz_generated.openapi.go \
	--go-header-file "$tmp/header.txt" \
	--report-filename "$tmp/violations.txt" \
	k8s.io/api/core/v1 k8s.io/api/coordination/v1 \
	k8s.io/api/apps/v1 k8s.io/api/autoscaling/v1 k8s.io/api/batch/v1 k8s.io/api/scheduling/v1alpha3 k8s.io/api/discovery/v1 k8s.io/api/policy/v1 k8s.io/api/rbac/v1 k8s.io/api/storage/v1 k8s.io/api/events/v1 k8s.io/api/authentication/v1 k8s.io/api/authorization/v1 \
	k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime \
	k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/api/resource \
	k8s.io/apimachinery/pkg/util/intstr
