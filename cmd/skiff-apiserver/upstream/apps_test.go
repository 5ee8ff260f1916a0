package upstream

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// testDaemonSet is a valid DaemonSet, defaulted as the shim's decoder
// defaults it.
func testDaemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	s := runtime.NewScheme()
	addDaemonSetDefaults(s)
	s.Default(ds)
	return ds
}

// TestDaemonSetsKind: the DaemonSets kind is upstream's daemonset
// strategy (defaults, selector validation, immutable selector, columns).
func TestDaemonSetsKind(t *testing.T) {
	k := daemonSets(testConverter(t))
	ds := testDaemonSet(t)
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.RevisionHistoryLimit == nil {
		t.Errorf("upstream's defaults not applied: %+v", ds.Spec)
	}
	k.PrepareForCreate(ds)
	if errs := k.ValidateCreate(ds); len(errs) != 0 {
		t.Fatalf("valid daemonset: %v", errs)
	}
	bad := ds.DeepCopy()
	bad.Spec.Template.Labels = map[string]string{"app": "other"}
	if errs := k.ValidateCreate(bad); !strings.Contains(errs.ToAggregate().Error(), "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`") {
		t.Errorf("selector mismatch: %v", errs)
	}
	changed := ds.DeepCopy()
	changed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	changed.Spec.Template.Labels = map[string]string{"app": "other"}
	k.PrepareForUpdate(changed, ds)
	if errs := k.ValidateUpdate(changed, ds); !strings.Contains(errs.ToAggregate().Error(), "spec.selector: Invalid value") {
		t.Errorf("selector change: %v, want it refused", errs)
	}
	if got, _ := tableColumns(t, k, ds); !strings.HasPrefix(got, "Name,Desired,Current,Ready,Up-to-date,Available,Node Selector,Age") {
		t.Errorf("table columns %s", got)
	}
}

// TestDaemonSetRunsOnEveryNode: upstream's DaemonSet controller in the
// server creates one pod per Node, bound to it by node affinity, and
// records a ControllerRevision.
func TestDaemonSetRunsOnEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	for _, name := range []string{"n1", "n2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ds := testDaemonSet(t)
	ds.Namespace = ""
	if _, err := client.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					for _, f := range term.MatchFields {
						nodes[strings.Join(f.Values, ",")] = true
					}
				}
			}
		}
		if len(pods.Items) == 2 && nodes["n1"] && nodes["n2"] {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("daemon pods: %d, for nodes %v; want one on each of n1 and n2", len(pods.Items), nodes)
		case <-time.After(100 * time.Millisecond):
		}
	}
	revs, err := client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 || revs.Items[0].Revision != 1 {
		t.Fatalf("controller revisions: %+v, %v; want revision 1", revs, err)
	}
}
