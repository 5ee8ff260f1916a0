package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeKubeletHost (issue 29, --node-kubelet-host): the kubelet of
// --node-name is reached at the given host on its Node's kubelet port,
// whatever the Node's addresses; another node still by its addresses. A
// host without a node name is refused.
func TestNodeKubeletHost(t *testing.T) {
	if _, err := New(context.Background(), Options{DataDir: t.TempDir(), NodeKubeletHost: "127.0.0.1"}); err == nil {
		t.Fatal("New with a node kubelet host and no node name: no error")
	}
	s, _, admin := startShimWith(t, Options{NodeName: "node-a", NodeKubeletHost: "127.0.0.1"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caPEM, err := os.ReadFile(filepath.Join(filepath.Dir(s.Kubeconfig), "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	kubelet := newFakeKubelet(t, caPEM)
	setupKubeletObjects(ctx, t, admin, kubelet)
	// node-a's addresses no longer lead to the kubelet (.invalid never
	// resolves); node-b has the same port but only such an address.
	node, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-a.invalid"}}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	if other, err = admin.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-b.invalid"}}
	other.Status.DaemonEndpoints = node.Status.DaemonEndpoints
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	onB := testPod("on-b", "node-b")
	onB.Spec.Containers[0].Name = "c"
	if _, err := admin.CoreV1().Pods("kl").Create(ctx, onB, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	body, err := streamLogs(ctx, admin, "p", &corev1.PodLogOptions{Container: "c"})
	if err != nil || string(body) != "line2\nline3\n" {
		t.Errorf("logs of node-a's pod: %q %v", body, err)
	}
	if u := kubelet.last(); u.Path != "/containerLogs/kl/p/c" {
		t.Errorf("kubelet got %s", u)
	}
	_, err = streamLogs(ctx, admin, "on-b", &corev1.PodLogOptions{Container: "c"})
	if err == nil || !strings.Contains(err.Error(), "node-b.invalid") {
		t.Errorf("logs of node-b's pod: %v, want a failure to reach node-b.invalid", err)
	}
}
