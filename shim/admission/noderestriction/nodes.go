package noderestriction

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// nodeObject: a node creates and updates only its own Node (upstream's
// admitNode); it may not set a configSource, nor, on update, change its
// taints or owner references; and it may not set or change labels under
// node-restriction.kubernetes.io/ or kubernetes.io / k8s.io labels other
// than the kubelet's own (well-known) ones.
func nodeObject(node string, a admission.Attributes) error {
	if a.GetName() != node {
		return forbidden(a, "node %q is not allowed to modify node %q", node, a.GetName())
	}
	n, ok := a.GetObject().(*corev1.Node)
	if !ok && a.GetOperation() != admission.Delete {
		return forbidden(a, "unexpected type %T", a.GetObject())
	}
	switch a.GetOperation() {
	case admission.Create:
		if n.Spec.ConfigSource != nil { //nolint:staticcheck // dynamic kubelet config is gone; upstream still refuses the field
			return forbidden(a, "node %q is not allowed to create pods with a non-nil configSource", node)
		}
		if bad := forbiddenLabels(n.Labels, nil); len(bad) > 0 {
			return forbidden(a, "node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
	case admission.Update:
		old, ok := a.GetOldObject().(*corev1.Node)
		if !ok {
			return forbidden(a, "unexpected type %T", a.GetOldObject())
		}
		return nodeUpdate(node, a, n, old)
	}
	return nil
}

// nodeUpdate checks an update of the node's own Node (and its status).
func nodeUpdate(node string, a admission.Attributes, n, old *corev1.Node) error {
	switch {
	case n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource): //nolint:staticcheck // as on create
		return forbidden(a, "node %q is not allowed to update configSource to a new non-nil configSource", node)
	case !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints):
		return forbidden(a, "node %q is not allowed to modify taints", node)
	case !apiequality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences):
		return forbidden(a, "node %q is not allowed to modify ownerReferences", node)
	}
	if bad := forbiddenLabels(n.Labels, old.Labels); len(bad) > 0 {
		return forbidden(a, "is not allowed to modify labels: %s", strings.Join(bad, ", "))
	}
	return nil
}

// forbiddenLabels returns, sorted, the keys whose value differs between
// labels and old (added, removed or changed) that a node may not touch:
// those under node-restriction.kubernetes.io/ (and its subdomains), and
// kubernetes.io or k8s.io keys that are not kubelet labels (upstream's
// getForbiddenLabels; k8s.io/kubelet's IsKubeletLabel).
func forbiddenLabels(labels, old map[string]string) []string {
	var bad []string
	check := func(k string) {
		v1, in1 := labels[k]
		v2, in2 := old[k]
		if in1 == in2 && v1 == v2 || slices.Contains(bad, k) {
			return
		}
		domain, _, hasDomain := strings.Cut(k, "/")
		if !hasDomain {
			return
		}
		restricted := domain == corev1.LabelNamespaceNodeRestriction ||
			strings.HasSuffix(domain, "."+corev1.LabelNamespaceNodeRestriction)
		kube := domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") ||
			domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io")
		if restricted || kube && !kubeletapis.IsKubeletLabel(k) {
			bad = append(bad, k)
		}
	}
	for k := range labels {
		check(k)
	}
	for k := range old {
		check(k)
	}
	slices.Sort(bad)
	return bad
}
