package upstream

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNoExecuteTaintEvicts: upstream's taint eviction controller in the
// server deletes a pod on a node tainted NoExecute that does not
// tolerate the taint (`kubectl taint node n1 k=v:NoExecute`), and leaves
// one that tolerates it.
func TestNoExecuteTaintEvicts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	taint := corev1.Taint{Key: "skiff.test/evict", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	for _, p := range []struct {
		name        string
		tolerations []corev1.Toleration
	}{
		{"intolerant", nil},
		{"tolerant", []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: corev1.PodSpec{NodeName: "n1",
			Tolerations: p.tolerations, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = []corev1.Taint{taint}
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "intolerant", metav1.GetOptions{})
		if err != nil || pod.DeletionTimestamp != nil {
			break // deleted (graceful, with no kubelet to finish it) or gone
		}
		select {
		case <-ctx.Done():
			t.Fatal("the pod that does not tolerate the NoExecute taint was not evicted")
		case <-time.After(100 * time.Millisecond):
		}
	}
	pod, err := client.CoreV1().Pods("default").Get(ctx, "tolerant", metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil {
		t.Errorf("the pod that tolerates the taint: %v, deleted %v; want kept", err, err == nil && pod.DeletionTimestamp != nil)
	}
}
