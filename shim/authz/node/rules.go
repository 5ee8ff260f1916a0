package node

import (
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Identity returns the node name of a node's user: a member of group
// system:nodes named system:node:<name>. isNode is false for everyone
// else; name may be empty for a node user without a name (refused by
// both the authorizer and NodeRestriction). As upstream's
// pkg/auth/nodeidentifier/default.go.
func Identity(u user.Info) (name string, isNode bool) {
	if u == nil {
		return "", false
	}
	name, ok := strings.CutPrefix(u.GetName(), "system:node:")
	if !ok || !slices.Contains(u.GetGroups(), user.NodesGroup) {
		return "", false
	}
	return name, true
}

// rule allows verbs on resources ("resource" or "resource/subresource") of
// API groups, as an RBAC PolicyRule without resource names.
type rule struct {
	verbs, groups, resources []string
}

// nodeRules is upstream's bootstrappolicy.NodeRules() of Kubernetes 1.34
// with 1.34's default feature gates (DynamicResourceAllocation and
// KubeletServiceAccountTokenForCredentialProviders on; ClusterTrustBundle
// and PodCertificateRequest off), from
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go. Resources the
// Authorizer subdivides (secrets, configmaps, PVCs, PVs, pods, nodes,
// leases, serviceaccounts, ...) never reach this table; they stay listed
// so that the table reads as upstream's.
func nodeRules() []rule {
	read := []string{"get", "list", "watch"}
	return []rule{
		// Needed to check API access. These creates are non-mutating.
		{[]string{"create"}, []string{"authentication.k8s.io"}, []string{"tokenreviews"}},
		{[]string{"create"}, []string{"authorization.k8s.io"}, []string{"subjectaccessreviews", "localsubjectaccessreviews"}},
		// The service lister, for the pods' service environment variables.
		{read, []string{""}, []string{"services"}},
		// Nodes register themselves and report status (NodeRestriction: only their own).
		{[]string{"create", "get", "list", "watch"}, []string{""}, []string{"nodes"}},
		{[]string{"update", "patch"}, []string{""}, []string{"nodes/status"}},
		{[]string{"update", "patch"}, []string{""}, []string{"nodes"}},
		// Events: core/v1 and, since 1.37, events.k8s.io, as NodeRules
		// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go).
		{[]string{"create", "update", "patch"}, []string{"", "events.k8s.io"}, []string{"events"}},
		// Pods: read, mirror pods, status, eviction (NodeRestriction narrows all).
		{read, []string{""}, []string{"pods"}},
		{[]string{"create", "delete"}, []string{""}, []string{"pods"}},
		{[]string{"update", "patch"}, []string{""}, []string{"pods/status"}},
		{[]string{"create"}, []string{""}, []string{"pods/eviction"}},
		// Objects the node's pods use (the Authorizer narrows them to those).
		{read, []string{""}, []string{"secrets", "configmaps"}},
		{[]string{"get"}, []string{""}, []string{"persistentvolumeclaims", "persistentvolumes"}},
		{[]string{"get"}, []string{""}, []string{"endpoints"}},
		// Client certificate rotation.
		{[]string{"create", "get", "list", "watch"}, []string{"certificates.k8s.io"}, []string{"certificatesigningrequests"}},
		{[]string{"get", "create", "update", "patch", "delete"}, []string{"coordination.k8s.io"}, []string{"leases"}},
		{[]string{"get"}, []string{"storage.k8s.io"}, []string{"volumeattachments"}},
		{[]string{"create"}, []string{""}, []string{"serviceaccounts/token"}},
		{[]string{"get", "update", "patch"}, []string{""}, []string{"persistentvolumeclaims/status"}},
		{[]string{"get", "watch", "list"}, []string{"storage.k8s.io"}, []string{"csidrivers"}},
		{[]string{"get", "create", "update", "patch", "delete"}, []string{"storage.k8s.io"}, []string{"csinodes"}},
		{read, []string{"node.k8s.io"}, []string{"runtimeclasses"}},
		// DynamicResourceAllocation (GA, on in 1.34).
		{[]string{"get"}, []string{"resource.k8s.io"}, []string{"resourceclaims"}},
		{[]string{"deletecollection"}, []string{"resource.k8s.io"}, []string{"resourceslices"}},
		// KubeletServiceAccountTokenForCredentialProviders (beta, on in 1.34).
		{[]string{"get"}, []string{""}, []string{"serviceaccounts"}},
	}
}

// allows reports whether any rule allows the resource request attrs (as
// upstream's rbac.RulesAllow for rules without resource names or URLs).
func allows(rules []rule, attrs authorizer.Attributes) bool {
	if !attrs.IsResourceRequest() {
		return false
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	for _, r := range rules {
		if slices.Contains(r.verbs, attrs.GetVerb()) && slices.Contains(r.groups, attrs.GetAPIGroup()) &&
			slices.Contains(r.resources, resource) {
			return true
		}
	}
	return false
}
