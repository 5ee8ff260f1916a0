package upstream

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1internal "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// addRBACToScheme registers rbac's internal types and the v1 conversions
// and defaults in s.
func addRBACToScheme(s *runtime.Scheme) error {
	if err := rbac.AddToScheme(s); err != nil {
		return err
	}
	return rbacv1internal.AddToScheme(s)
}

// rbacKinds are rbac.authorization.k8s.io/v1 Roles, RoleBindings,
// ClusterRoles and ClusterRoleBindings with upstream's strategies: stored
// and served (a chart's RBAC objects install), not yet enforced: the
// shim's authorizers decide (decision 112's follow-ups).
func rbacKinds(c converter) []*generic.Kind {
	kinds := []*generic.Kind{
		c.withStrategy(&generic.Kind{
			Group: rbacv1.GroupName, Version: "v1", Resource: "roles", Singular: "role", Namespaced: true,
			New:     func() runtime.Object { return &rbacv1.Role{} },
			NewList: func() runtime.Object { return &rbacv1.RoleList{} },
		}, role.Strategy, nil),
		c.withStrategy(&generic.Kind{
			Group: rbacv1.GroupName, Version: "v1", Resource: "rolebindings", Singular: "rolebinding", Namespaced: true,
			New:     func() runtime.Object { return &rbacv1.RoleBinding{} },
			NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
		}, rolebinding.Strategy, nil),
		c.withStrategy(&generic.Kind{
			Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles", Singular: "clusterrole",
			New:     func() runtime.Object { return &rbacv1.ClusterRole{} },
			NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		}, clusterrole.Strategy, nil),
		c.withStrategy(&generic.Kind{
			Group: rbacv1.GroupName, Version: "v1", Resource: "clusterrolebindings", Singular: "clusterrolebinding",
			New:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		}, clusterrolebinding.Strategy, nil),
	}
	// Upstream prints the bindings (role, subjects) but not the roles:
	// their storage has the default Table (name, creation time).
	kinds[0].Table = rest.NewDefaultTableConvertor(rbac.Resource("roles"))
	kinds[2].Table = rest.NewDefaultTableConvertor(rbac.Resource("clusterroles"))
	return kinds
}
