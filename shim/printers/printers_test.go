package printers

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)

func created(ago time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "x", CreationTimestamp: metav1.NewTime(now.Add(-ago))}
}

// TestRows_I72: each kind's cells, as kubectl prints them from
// kube-apiserver (checklist I.72: the server answers with a Table).
func TestRows_I72(t *testing.T) {
	holder := "node-a"
	for _, tc := range []struct {
		name  string
		table *Table
		obj   runtime.Object
		want  []any
	}{
		{"configmap", ConfigMaps(), &corev1.ConfigMap{ObjectMeta: created(5 * time.Second),
			Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": nil}}, []any{"x", int64(2), "5s"}},
		{"secret", Secrets(), &corev1.Secret{ObjectMeta: created(90 * time.Second), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"k": nil}}, []any{"x", "Opaque", int64(1), "90s"}},
		{"namespace", Namespaces(), &corev1.Namespace{ObjectMeta: created(3 * time.Hour),
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, []any{"x", "Active", "3h"}},
		{"serviceaccount", ServiceAccounts(), &corev1.ServiceAccount{ObjectMeta: created(time.Minute)}, []any{"x", int64(0), "60s"}},
		{"lease", Leases(), &coordinationv1.Lease{ObjectMeta: created(10 * time.Minute),
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, []any{"x", "node-a", "10m"}},
		{"pod pending", Pods(), &corev1.Pod{ObjectMeta: created(2 * time.Second),
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}},
			[]any{"x", "0/1", "Pending", "0", "2s", "<none>", "<none>", "<none>", "<none>"}},
		{"pod running", Pods(), &corev1.Pod{ObjectMeta: created(time.Minute),
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app"}},
				ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.5",
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}},
			[]any{"x", "1/1", "Running", "0", "60s", "10.88.0.5", "node-a", "<none>", "0/1"}},
		{"node", Nodes(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour)),
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}},
			Spec: corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}},
				NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.34.4+skiff", OSImage: "Debian GNU/Linux 12"}}},
			[]any{"n", "Ready,SchedulingDisabled", "control-plane,edge", "2d", "v1.34.4+skiff", "10.0.0.2", "<none>",
				"Debian GNU/Linux 12", "<unknown>", "<unknown>"}},
		{"node without ready condition", Nodes(), &corev1.Node{ObjectMeta: created(time.Second)},
			[]any{"x", "Unknown", "<none>", "1s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"deployment", Deployments(), &appsv1.Deployment{ObjectMeta: created(time.Minute),
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.14.2"}, {Name: "log", Image: "busybox"}}}}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
			[]any{"x", "2/3", int64(3), int64(2), "60s", "nginx,log", "nginx:1.14.2,busybox", "app=web"}},
		{"replicaset", ReplicaSets(), &appsv1.ReplicaSet{ObjectMeta: created(time.Minute),
			Spec:   appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "i"}}}}},
			Status: appsv1.ReplicaSetStatus{Replicas: 1}},
			[]any{"x", int64(1), int64(1), int64(0), "60s", "app", "i", ""}},
		{"event", Events(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{app}"},
			Type:           "Normal", Reason: "Started", Message: " Started container app\n",
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
			FirstTimestamp: metav1.NewTime(now.Add(-time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-5 * time.Second)), Count: 3},
			[]any{"5s", "Normal", "Started", "pod/p", "spec.containers{app}", "kubelet, node-a", "Started container app", "60s", int64(3), "p.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.table.Row(tc.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("row %#v\nwant %#v", got, tc.want)
			}
			if len(got) != len(tc.table.Columns) {
				t.Errorf("%d cells for %d columns", len(got), len(tc.table.Columns))
			}
		})
	}
}

func TestConvertToTable(t *testing.T) {
	tbl := ConfigMaps()
	tbl.clock = clocktesting.NewFakePassiveClock(now)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "c"},
		Items: []corev1.ConfigMap{{ObjectMeta: created(time.Second)}, {ObjectMeta: created(2 * time.Second)}}}
	got, err := tbl.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 2 || got.ResourceVersion != "42" || got.Continue != "c" || len(got.ColumnDefinitions) != 3 {
		t.Fatalf("table %+v", got)
	}
	if got.Rows[1].Cells[2] != "2s" || got.Rows[0].Object.Object != &list.Items[0] {
		t.Errorf("rows %+v", got.Rows)
	}
	got, err = tbl.ConvertToTable(context.Background(), &list.Items[0], &metav1.TableOptions{NoHeaders: true})
	if err != nil || len(got.Rows) != 1 || got.ColumnDefinitions != nil {
		t.Errorf("one object without headers: %+v, %v", got, err)
	}
	if _, err := tbl.ConvertToTable(context.Background(), &corev1.Secret{}, nil); err == nil {
		t.Error("a secret in the configmap table: no error")
	}
}
