package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRBACTables: kubectl get of each RBAC kind gets upstream's columns:
// the default Table (name, creation time) for Roles and ClusterRoles,
// upstream's printers for the bindings.
func TestRBACTables(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := startServer(ctx, t)
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "default"}}
	meta := metav1.ObjectMeta{Name: "reader"}
	rbac := client.RbacV1()
	if _, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		resource, namespace, columns string
	}{
		{"roles", "default", "Name,Created At"},
		{"clusterroles", "", "Name,Created At"},
		{"rolebindings", "default", "Name,Role,Age,Users,Groups,ServiceAccounts"},
		{"clusterrolebindings", "", "Name,Role,Age,Users,Groups,ServiceAccounts"},
	} {
		body, err := rbac.RESTClient().Get().Resource(tt.resource).Namespace(tt.namespace).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		if err != nil {
			t.Errorf("%s as a Table: %v", tt.resource, err)
			continue
		}
		var table metav1.Table
		if err := json.Unmarshal(body, &table); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, ","); got != tt.columns {
			t.Errorf("%s columns %q, want %q", tt.resource, got, tt.columns)
		}
	}
}
