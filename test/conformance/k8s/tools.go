//go:build tools

// Package k8s pins the Kubernetes test code that `make conformance` builds:
// e2e.test (go test -c k8s.io/kubernetes/test/e2e), agnhost, nnp (the
// nonewprivs image), the ginkgo CLI and kube-proxy (the full conformance
// run's). It is a module of its own so that
// skiff's module never requires k8s.io/kubernetes; nothing here is
// compiled except through those commands.
package k8s

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"

	// The packages e2e_test.go (the e2e.test binary) links.
	_ "k8s.io/kubernetes/test/conformance/testdata"
	_ "k8s.io/kubernetes/test/e2e/apimachinery"
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/architecture"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/autoscaling"
	_ "k8s.io/kubernetes/test/e2e/common"
	_ "k8s.io/kubernetes/test/e2e/dra"
	_ "k8s.io/kubernetes/test/e2e/feature"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/invariants"
	_ "k8s.io/kubernetes/test/e2e/invariants/logcheck"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/node"
	_ "k8s.io/kubernetes/test/e2e/scheduling"
	_ "k8s.io/kubernetes/test/e2e/storage"
	_ "k8s.io/kubernetes/test/e2e/storage/csimock"
	_ "k8s.io/kubernetes/test/e2e/storage/external"
	_ "k8s.io/kubernetes/test/e2e/testing-manifests"
	_ "k8s.io/kubernetes/test/e2e/windows"
	_ "k8s.io/kubernetes/test/fixtures"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)
