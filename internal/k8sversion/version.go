// Package k8sversion names the Kubernetes release skiff follows: the node
// version it reports, the User-Agents of its probes and hooks, and (read by
// the Makefile and hack/bump-kubernetes.sh) the version of every k8s.io
// module and of the control plane, kubelet and conformance suite the tests
// build. Changing Version here is the first step of a bump;
// docs/kubernetes-version.md lists the rest.
package k8sversion

const (
	// Version is the Kubernetes release, as its tags spell it.
	Version = "v1.37.2"
	// MajorMinor is Version's "<major>.<minor>", as the kubelet's
	// User-Agents carry it.
	MajorMinor = "1.37"
	// KubeletVersion is the nodeInfo.kubeletVersion skiff reports: the
	// release whose kubelet it follows, with build metadata naming skiff (a
	// semantic version that sorts as that release).
	KubeletVersion = Version + "+skiff"
	// OldestAPIServer is the oldest kube-apiserver a node of Version joins.
	// Upstream's skew policy has a kubelet up to three minors older than its
	// API server, never newer; skiff also spans those three minors the other
	// way, so a fleet may move its nodes before its control plane (issue
	// 32). make e2e-skew proves the oldest; make e2e the newest.
	OldestAPIServer = "v1.34.4"
)
