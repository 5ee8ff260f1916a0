package upstream

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStatefulSetRunsInOrder: upstream's StatefulSet controller in the
// server creates web-0, and web-1 only once web-0 is running and ready
// (OrderedReady; this test writes the pods' status, as a kubelet would);
// kubectl's columns and validation texts are upstream's.
func TestStatefulSetRunsInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	labels := map[string]string{"app": "web"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "web",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	bad := sts.DeepCopy()
	bad.Name, bad.Spec.Template.Labels = "bad", map[string]string{"app": "other"}
	_, err := client.AppsV1().StatefulSets("default").Create(ctx, bad, metav1.CreateOptions{})
	if want := "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a selector that does not match: %v, want %q", err, want)
	}
	if _, err := client.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func() string {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		return strings.Join(names, ",")
	}
	// Once the controller has written the status of the sync that made
	// web-0, it has decided on web-1 too: none while web-0 is not ready.
	waitFor(ctx, t, "pod web-0 alone, in the StatefulSet's status", func() bool {
		s, err := client.AppsV1().StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && s.Status.ObservedGeneration == 1 && s.Status.Replicas == 1 && pods() == "web-0"
	})
	if got := pods(); got != "web-0" {
		t.Fatalf("pods %q before web-0 is ready, want web-0 alone", got)
	}
	p, err := client.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Hostname != "web-0" || p.Spec.Subdomain != "web" {
		t.Errorf("web-0's hostname %q, subdomain %q; want web-0, web (stable network identity)", p.Spec.Hostname, p.Spec.Subdomain)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "pods web-0 and web-1", func() bool { return pods() == "web-0,web-1" })
	scale, err := client.AppsV1().StatefulSets("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 2 {
		t.Errorf("scale: %v, %+v", err, scale)
	}
}

// TestRBACKinds: Roles and ClusterRoles are stored with upstream's
// validation, and upstream's aggregation controller fills an aggregated
// ClusterRole's rules.
func TestRBACKinds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	rbac := client.RbacV1()
	_, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
	if want := "rules[0].verbs: Required value: verbs must contain at least one value"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a rule without verbs: %v, want %q", err, want)
	}
	read := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Labels: map[string]string{"aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{read}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"aggregate-to-view": "true"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the aggregated rules of view", func() bool {
		view, err := rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
		return err == nil && len(view.Rules) == 1 && fmt.Sprint(view.Rules[0].Verbs) == "[get list]"
	})
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
